package egress_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/egress"
)

func TestClassifyMatchesTheDenyList(t *testing.T) {
	t.Parallel()
	cases := map[string]string{ // address → reason ("" = allowed)
		// IPv4, denied.
		"0.0.0.0":         "unspecified",
		"0.1.2.3":         "this_network",
		"10.0.0.1":        "private",
		"10.255.255.255":  "private",
		"100.64.0.1":      "cgnat",
		"100.127.255.254": "cgnat",
		"100.100.100.200": "cloud_metadata",
		"127.0.0.1":       "loopback",
		"127.0.0.2":       "loopback",
		"127.255.255.254": "loopback",
		"169.254.169.254": "cloud_metadata",
		"169.254.170.2":   "cloud_metadata",
		"169.254.0.1":     "link_local",
		"172.16.0.1":      "private",
		"172.31.255.255":  "private",
		"192.0.0.1":       "ietf_protocol",
		"192.0.0.170":     "ietf_protocol",
		"192.0.2.10":      "documentation",
		"192.88.99.1":     "reserved",
		"192.168.1.1":     "private",
		"198.18.0.1":      "benchmarking",
		"198.19.255.255":  "benchmarking",
		"198.51.100.7":    "documentation",
		"203.0.113.9":     "documentation",
		"224.0.0.1":       "multicast",
		"239.255.255.250": "multicast",
		"240.0.0.1":       "reserved",
		"255.255.255.255": "broadcast",
		// IPv4, allowed: the neighbours of the denied ranges.
		"1.1.1.1":         "",
		"8.8.8.8":         "",
		"93.184.216.34":   "",
		"9.255.255.255":   "",
		"11.0.0.0":        "",
		"100.63.255.255":  "",
		"100.128.0.0":     "",
		"172.15.255.255":  "",
		"172.32.0.0":      "",
		"192.167.255.255": "",
		"198.17.255.255":  "",
		"223.255.255.255": "",
		// IPv6, denied.
		"::":                   "unspecified",
		"::1":                  "loopback",
		"fc00::1":              "unique_local",
		"fd00::1":              "unique_local",
		"fd00:ec2::254":        "cloud_metadata",
		"fe80::1":              "link_local",
		"fe80::1%eth0":         "link_local",
		"febf::1":              "link_local",
		"fec0::1":              "reserved",
		"ff02::1":              "multicast",
		"ff05::2":              "multicast",
		"100::1":               "discard_only",
		"2001:db8::1":          "documentation",
		"3fff::1":              "documentation",
		"2001:2::1":            "benchmarking",
		"64:ff9b:1::a9fe:a9fe": "nat64_local",
		"5f00::1":              "reserved",
		// IPv4 embedded in IPv6.
		"::ffff:127.0.0.2":                     "loopback",
		"::ffff:169.254.169.254":               "cloud_metadata",
		"::ffff:a9fe:a9fe":                     "cloud_metadata",
		"::ffff:10.0.0.1":                      "private",
		"::127.0.0.1":                          "ipv4_compatible:loopback",
		"::8.8.8.8":                            "ipv4_compatible",
		"64:ff9b::a9fe:a9fe":                   "nat64:cloud_metadata",
		"64:ff9b::7f00:1":                      "nat64:loopback",
		"64:ff9b::10.1.2.3":                    "nat64:private",
		"2002:a9fe:a9fe::":                     "6to4:cloud_metadata",
		"2002:7f00:1::1":                       "6to4:loopback",
		"2002:c0a8:101::1":                     "6to4:private",
		"2001:0:4136:e378:8000:63bf:80ff:fffe": "teredo:loopback",      // client 127.0.0.1
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": "teredo:documentation", // client 192.0.2.45
		// IPv6, allowed.
		"2606:4700:4700::1111":                 "",
		"2001:4860:4860::8888":                 "",
		"64:ff9b::808:808":                     "",
		"2002:808:808::1":                      "",
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7": "", // Teredo client 8.8.8.8
		"::ffff:8.8.8.8":                       "",
	}
	require.GreaterOrEqual(t, len(cases), 40)
	for addr, want := range cases {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			reason, denied := egress.Classify(netip.MustParseAddr(addr))
			require.Equal(t, want, reason)
			require.Equal(t, want != "", denied)
		})
	}
}

func TestClassifyRefusesTheZeroAddr(t *testing.T) {
	t.Parallel()
	_, denied := egress.Classify(netip.Addr{})
	require.True(t, denied)
}

// FuzzClassify checks the classification against the standard library and the
// embeddings: every address Go itself calls loopback, private, link-local, multicast
// or unspecified is denied; zones never matter; and an IPv4 address that is denied
// stays denied in its IPv4-mapped, NAT64, 6to4 and Teredo forms.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "169.254.169.254", "10.1.2.3", "8.8.8.8", "::1", "fe80::1",
		"64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::", "2001:0:4136:e378:8000:63bf:80ff:fffe", "2606:4700::1"} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ip, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		reason, denied := egress.Classify(ip)
		if denied == (reason == "") {
			t.Fatalf("%s: denied=%v with reason %q", ip, denied, reason)
		}
		if std := ip.Unmap(); (std.IsLoopback() || std.IsPrivate() || std.IsLinkLocalUnicast() ||
			std.IsMulticast() || std.IsUnspecified() || !std.IsGlobalUnicast()) && !denied {
			t.Fatalf("%s is not global unicast but was allowed", ip)
		}
		if ip.Is6() && !ip.Is4In6() {
			zoned, _ := egress.Classify(ip.WithZone("eth0"))
			if zoned != reason {
				t.Fatalf("%s: zone changed the reason from %q to %q", ip, reason, zoned)
			}
		}
		if ip.Is4() && denied {
			for _, form := range embeddedForms(ip) {
				if _, d := egress.Classify(form); !d {
					t.Fatalf("%s (embedding denied %s) was allowed", form, ip)
				}
			}
		}
	})
}

// embeddedForms returns v4 as IPv4-mapped, NAT64, 6to4 and Teredo client addresses.
func embeddedForms(v4 netip.Addr) []netip.Addr {
	b := v4.As4()
	mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
	nat64 := netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
	sixToFour := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: b[0], 3: b[1], 4: b[2], 5: b[3], 15: 1})
	teredo := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x01, 4: 0x41, 5: 0x36, 6: 0xe3, 7: 0x78,
		12: ^b[0], 13: ^b[1], 14: ^b[2], 15: ^b[3]})
	return []netip.Addr{mapped, nat64, sixToFour, teredo}
}
