package egress_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/egress/egresstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// resolver is a scripted DNS: each host answers its scripted records in turn (the last
// one forever), and every lookup is counted.
type resolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	lookups map[string]int
}

func newResolver(answers map[string][]string) *resolver {
	r := &resolver{answers: map[string][][]netip.Addr{}, lookups: map[string]int{}}
	for host, addrs := range answers {
		r.script(host, addrs...)
	}
	return r
}

// script appends one answer (a set of records) for host.
func (r *resolver) script(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var answer []netip.Addr
	for _, a := range addrs {
		answer = append(answer, netip.MustParseAddr(a))
	}
	r.answers[host] = append(r.answers[host], answer)
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	script, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	n := min(r.lookups[host], len(script)-1)
	r.lookups[host]++
	return append([]netip.Addr(nil), script[n]...), nil
}

func (r *resolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

func allowlist(t *testing.T, spec string) egress.Allowlist {
	t.Helper()
	a, err := egress.ParseAllowlist(spec)
	require.NoError(t, err)
	return a
}

// With the dev allowlist 127.0.0.1/32, none of the disguises of another loopback
// address, the metadata endpoint or a private network is ever dialed.
func TestDialerNeverDialsDeniedDestinations(t *testing.T) {
	t.Parallel()
	v4 := egresstest.Listen(t, "127.0.0.2:0")
	port := v4.Port()
	v6 := egresstest.Listen(t, "[::1]:"+port)
	dns := newResolver(map[string][]string{
		"ip6-localhost":     {"::1"},
		"rebound.test":      {"127.0.0.2"},
		"mixed.test":        {"93.184.216.34", "10.0.0.1"},
		"metadata.test":     {"169.254.169.254"},
		"mapped.test":       {"::ffff:127.0.0.2"},
		"127.0.0.2.nip.io":  {"127.0.0.2"},
		"ula.test":          {"fd00::1"},
		"nat64-loop.test":   {"64:ff9b::7f00:2"},
		"public-port.test":  {"93.184.216.34"},
		"linklocal-zone.ip": {"fe80::1%lo"},
	})
	d := egress.New(egress.Config{Allow: allowlist(t, "127.0.0.1/32"), Resolver: dns})
	cases := map[string]string{ // addr → reason
		"127.0.0.2:" + port:          "loopback",
		"[::ffff:127.0.0.2]:" + port: "loopback",
		"[::ffff:7f00:2]:" + port:    "loopback",
		"2130706434:" + port:         "ambiguous_ip_notation",
		"0x7f000002:" + port:         "ambiguous_ip_notation",
		"0177.0.0.2:" + port:         "ambiguous_ip_notation",
		"127.2:" + port:              "ambiguous_ip_notation",
		"127.0.0.2.:" + port:         "loopback",
		"[::1]:" + port:              "loopback",
		"ip6-localhost:" + port:      "loopback",
		"rebound.test:" + port:       "loopback",
		"127.0.0.2.nip.io:" + port:   "loopback",
		"mapped.test:" + port:        "loopback",
		"nat64-loop.test:" + port:    "nat64:loopback",
		"169.254.169.254:80":         "cloud_metadata",
		"metadata.test:80":           "cloud_metadata",
		"[fe80::1%25lo]:" + port:     "link_local",
		"[fe80::1%lo]:" + port:       "link_local",
		"linklocal-zone.ip:" + port:  "link_local",
		"[::]:" + port:               "unspecified",
		"0.0.0.0:" + port:            "unspecified",
		"mixed.test:443":             "private",
		"ula.test:443":               "unique_local",
		"public-port.test:" + port:   "port_not_allowed",
		"93.184.216.34:22":           "port_not_allowed",
		"127.0.0.2:0":                "invalid_address",
		"127.0.0.2":                  "invalid_address",
	}
	for addr, reason := range cases {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			conn, err := d.DialContext(context.Background(), "tcp", addr)
			if conn != nil {
				_ = conn.Close()
			}
			egresstest.RequireBlocked(t, err, reason)
		})
	}
	t.Cleanup(func() {
		require.Zero(t, v4.Accepted(), "nothing reached 127.0.0.2")
		require.Zero(t, v6.Accepted(), "nothing reached ::1")
	})
}

// The address checked is the address dialed: a rebinding DNS that answers an allowed
// address first and a denied one next is looked up exactly once per dial, and the
// connection goes to the answer that was checked.
func TestDialerDialsTheAddressItChecked(t *testing.T) {
	t.Parallel()
	allowed := egresstest.Listen(t, "127.0.0.1:0")
	denied := egresstest.Listen(t, "127.0.0.2:"+allowed.Port())
	dns := newResolver(nil)
	dns.script("rebind.test", "127.0.0.1")
	dns.script("rebind.test", "127.0.0.2")
	d := egress.New(egress.Config{Allow: allowlist(t, "127.0.0.1/32"), Resolver: dns})
	addr := "rebind.test:" + allowed.Port()

	conn, err := d.DialContext(context.Background(), "tcp", addr)
	require.NoError(t, err)
	require.Equal(t, allowed.Addr().String(), conn.RemoteAddr().String())
	require.NoError(t, conn.Close())
	require.Equal(t, 1, dns.count("rebind.test"), "one lookup per dial: nothing re-resolves after the check")

	_, err = d.DialContext(context.Background(), "tcp", addr)
	egresstest.RequireBlocked(t, err, "loopback")
	require.Equal(t, 2, dns.count("rebind.test"))
	require.Zero(t, denied.Accepted(), "the rebound address is never dialed")
}

func TestDialerDialsAllowlistedAddresses(t *testing.T) {
	t.Parallel()
	ln := egresstest.Listen(t, "127.0.0.1:0")
	d := egresstest.Guard(t, "127.0.0.1/32")
	for _, addr := range []string{ln.Addr().String(), "[::ffff:127.0.0.1]:" + ln.Port()} {
		conn, err := d.DialContext(context.Background(), "tcp", addr)
		require.NoError(t, err, addr)
		require.NoError(t, conn.Close())
	}
}

// permitted reports whether the policy let addr through: the context is already
// cancelled, so an admitted destination fails with the context's error and no packet
// leaves the machine.
func permitted(t *testing.T, d *egress.Dialer, addr string) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	require.Nil(t, conn)
	var blocked *egress.BlockedError
	if errors.As(err, &blocked) {
		return false
	}
	require.ErrorIs(t, err, context.Canceled)
	return true
}

func TestAllowlistEntries(t *testing.T) {
	t.Parallel()
	dns := newResolver(map[string][]string{
		"logistics.internal": {"10.0.3.7"},
		"loopback.internal":  {"127.0.0.1"},
		"metadata.internal":  {"169.254.169.254"},
		"public.example":     {"93.184.216.34"},
		"ula.internal":       {"fd00::7"},
	})
	cases := []struct {
		allow, addr string
		want        bool
	}{
		{"", "public.example:443", true},
		{"", "public.example:80", true},
		{"", "public.example:8443", false},
		{"public.example:8443", "public.example:8443", true},
		{"public.example:8443", "public.example:8444", false},
		{"", "logistics.internal:443", false},
		{"logistics.internal", "logistics.internal:443", true},
		{"logistics.internal", "logistics.internal:8082", false},
		{"LOGISTICS.Internal.:8082", "logistics.internal.:8082", true},
		{"logistics.internal:8082", "logistics.internal:443", false},
		{"ula.internal", "ula.internal:443", true},
		{"loopback.internal", "loopback.internal:443", false},
		{"metadata.internal", "metadata.internal:80", false},
		{"10.0.0.0/8", "logistics.internal:8082", true},
		{"10.0.0.0/8:8082", "logistics.internal:8082", true},
		{"10.0.0.0/8:8082", "logistics.internal:8083", false},
		{"10.0.3.7:8082", "10.0.3.7:8082", true},
		{"10.0.3.7:8082", "10.0.3.8:8082", false},
		{"127.0.0.0/8", "127.0.0.9:5432", true},
		{"0.0.0.0/0", "169.254.169.254:80", false},
		{"0.0.0.0/0", "metadata.internal:80", false},
		{"0.0.0.0/0", "0.0.0.0:80", false},
		{"::/0", "[fe80::1]:80", false},
		{"::/0", "[fd00:ec2::254]:80", false},
		{"fd00::/8", "ula.internal:9000", true},
		{"fd00::/8", "[::1]:9000", false},
		{"[fd00::7]:9000", "[fd00::7]:9000", true},
	}
	for _, c := range cases {
		t.Run(c.allow+"→"+c.addr, func(t *testing.T) {
			t.Parallel()
			d := egress.New(egress.Config{Allow: allowlist(t, c.allow), Resolver: dns})
			require.Equal(t, c.want, permitted(t, d, c.addr))
		})
	}
}

func TestParseAllowlistRejectsBadEntries(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		"169.254.169.254", "169.254.0.0/16", "169.254.169.254/32:80", "fe80::/64", "0.0.0.0",
		"224.0.0.1", "fd00:ec2::254", "10.0.0.0/33", "10.0.0.0/8:0", "10.0.0.0/8:http",
		"10.0.0.1:70000", "::ffff:10.0.0.1", "fe80::1%eth0", "2130706433", "0x7f000001", "127.1",
		"-bad.example", "bad_host.example", "a..b", "http://example.com", "example.com:",
	} {
		_, err := egress.ParseAllowlist(spec)
		require.Error(t, err, spec)
		require.Contains(t, err.Error(), spec[:min(len(spec), 8)], "the error names the entry")
	}
	a, err := egress.ParseAllowlist(" 127.0.0.1/32, 10.0.0.0/8:8082 logistics.internal:8082,fd00::/8 ")
	require.NoError(t, err)
	require.NotZero(t, a)
}

func TestAdmitsChecksWithoutDialing(t *testing.T) {
	t.Parallel()
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	d := egress.New(egress.Config{Allow: allow})
	if err := d.Admits(context.Background(), "127.0.0.1:8082"); err != nil {
		t.Fatalf("allowlisted destination refused: %v", err)
	}
	var blocked *egress.BlockedError
	if err := d.Admits(context.Background(), "127.0.0.2:8082"); !errors.As(err, &blocked) {
		t.Fatalf("127.0.0.2 admitted (err %v)", err)
	}
}
