package harness

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeAddrAvoidsTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low <= minPort+1000 {
		t.Skipf("no room below the ephemeral range (it starts at %d)", low)
	}
	for range 20 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port < minPort || port >= low {
			t.Fatalf("port %d outside [%d, %d)", port, minPort, low)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the address is not free: %v", err)
		}
		ln.Close()
	}
}
