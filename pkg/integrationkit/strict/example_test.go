package strict_test

import (
	"fmt"

	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
)

func ExampleDecode() {
	var order struct {
		ItemID   string `json:"item_id"`
		Quantity int64  `json:"quantity"`
	}
	for _, body := range []string{
		`{"item_id":"i-1","quantity":2}`,
		`{"item_id":"i-1","quantity":2,"quantity":1}`,
		`{"Item_ID":"i-1","quantity":2}`,
	} {
		fmt.Println(strict.Decode([]byte(body), &order))
	}
	// Output:
	// <nil>
	// duplicate member "quantity"
	// unknown member "Item_ID"
}

func ExampleCheckQuery() {
	err := strict.CheckQuery("customer_id=cust-42&limit=10", "status", "customer", "limit", "cursor")
	p := problem.From(err)
	fmt.Println(p.Status, p.Type, p.Detail)
	// Output:
	// 400 https://handoff.dev/problems/unknown-parameter unknown query parameter "customer_id"
}
