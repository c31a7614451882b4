package egress_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"handoff/pkg/integrationkit/egress"
)

// A service parses its allowlist once at start-up, makes one guard of it, and sends
// every outgoing request through a client NewClient built on that guard (the kit's
// dispatcher, pager and any service client take the guard and do so themselves).
func ExampleNewClient() {
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		panic(err)
	}
	guard := egress.New(egress.Config{Allow: allow})
	client := egress.NewClient(guard, egress.ClientConfig{Timeout: 10 * time.Second})
	defer client.CloseIdleConnections()

	_, err = client.Get("http://169.254.169.254/latest/meta-data/")
	var blocked *egress.BlockedError
	fmt.Println(errors.As(err, &blocked), blocked.Reason)
	// Output: true cloud_metadata
}

// A body is read whole only when it fits the limit the caller chose.
func ExampleReadBody() {
	data, err := egress.ReadBody(strings.NewReader("a short answer"), 64)
	fmt.Printf("%q %v\n", data, err)
	data, err = egress.ReadBody(strings.NewReader(strings.Repeat("x", 1<<20)), 4)
	fmt.Printf("%q %v\n", data, errors.Is(err, egress.ErrBodyTooLarge))
	// Output:
	// "a short answer" <nil>
	// "xxxx" true
}

func ExampleClassify() {
	for _, s := range []string{"8.8.8.8", "10.1.2.3", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe"} {
		reason, denied := egress.Classify(netip.MustParseAddr(s))
		fmt.Printf("%s denied=%v reason=%q\n", s, denied, reason)
	}
	// Output:
	// 8.8.8.8 denied=false reason=""
	// 10.1.2.3 denied=true reason="private"
	// ::ffff:127.0.0.1 denied=true reason="loopback"
	// 64:ff9b::a9fe:a9fe denied=true reason="nat64:cloud_metadata"
}
