package egress_test

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"handoff/pkg/integrationkit/egress"
)

// A sender parses its allowlist once at start-up and sends every outgoing request
// through the guarded client (or hands Dialer.DialContext to its own transport, as
// delivery.Deps.DialContext does).
func ExampleNewClient() {
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		panic(err)
	}
	client := egress.NewClient(egress.New(egress.Config{Allow: allow}), 10*time.Second)
	defer client.CloseIdleConnections()

	_, err = client.Get("http://169.254.169.254/latest/meta-data/")
	var blocked *egress.BlockedError
	fmt.Println(errors.As(err, &blocked), blocked.Reason)
	// Output: true cloud_metadata
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
