package egress

import (
	"context"
	"errors"
	"testing"
)

// The control hook judges the socket address on its own, whatever the earlier checks
// said: it is the last word before connect.
func TestControlRefusesDeniedSocketAddresses(t *testing.T) {
	t.Parallel()
	allow, err := ParseAllowlist("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	control := New(Config{Allow: allow}).control(destination{host: "logistics.test", port: 8082})
	cases := map[string]string{ // socket address → reason ("" = admitted)
		"127.0.0.1:8082":       "",
		"127.0.0.2:8082":       "loopback",
		"[::1]:8082":           "loopback",
		"[fe80::1%lo]:8082":    "link_local",
		"169.254.169.254:80":   "cloud_metadata",
		"[::ffff:10.0.0.1]:80": "private",
		"93.184.216.34:8082":   "port_not_allowed",
		"93.184.216.34:443":    "",
		"not-an-address":       "invalid_address",
	}
	for addr, want := range cases {
		err := control(context.Background(), "tcp", addr, nil)
		var blocked *BlockedError
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused: %v", addr, err)
		case want != "" && (!errors.As(err, &blocked) || blocked.Reason != want):
			t.Errorf("%s: got %v, want reason %s", addr, err, want)
		}
	}
}
