package wire_test

import (
	"fmt"

	"handoff/pkg/integrationkit/wire"
)

// A sender checks its callers' input with the rules its receiver applies, and
// answers a refusal with the field's name and the check's text.
func ExampleCheckKeyID() {
	for _, id := range []string{"PAY-2026-0001", "Zahlung-Müller"} {
		if err := wire.CheckKeyID(id); err != nil {
			fmt.Printf("payment_id %s\n", err)
			continue
		}
		fmt.Println("accepted:", id)
	}
	// Output:
	// accepted: PAY-2026-0001
	// payment_id must be printable ASCII
}
