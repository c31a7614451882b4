package egress

import "net/netip"

// class says which allowlist entries, if any, may exempt a denied address.
type class uint8

const (
	// public addresses are not denied (only the port policy applies).
	public class = iota
	// internal addresses (private networks) are exempted by a matching host or
	// address entry.
	internal
	// restricted addresses (loopback, reserved, documentation, embeddings of denied
	// IPv4) are exempted only by an address entry.
	restricted
	// forbidden addresses (cloud metadata, link-local, unspecified, multicast,
	// broadcast) are never exempted.
	forbidden
)

// verdict is the classification of one address; the zero value means public.
type verdict struct {
	reason string
	class  class
}

type rangeRule struct {
	prefix netip.Prefix
	verdict
}

func rule(cidr, reason string, c class) rangeRule {
	return rangeRule{prefix: netip.MustParsePrefix(cidr), verdict: verdict{reason: reason, class: c}}
}

// rules is the deny list (IANA special-purpose registries plus cloud metadata), the
// more specific prefixes first so they name the reason.
var rules = []rangeRule{
	// IPv4.
	rule("0.0.0.0/32", "unspecified", forbidden),
	rule("0.0.0.0/8", "this_network", forbidden),
	rule("10.0.0.0/8", "private", internal),
	rule("100.100.100.200/32", "cloud_metadata", forbidden), // Alibaba Cloud
	rule("100.64.0.0/10", "cgnat", internal),
	rule("127.0.0.0/8", "loopback", restricted),
	rule("169.254.169.254/32", "cloud_metadata", forbidden), // AWS, GCP, Azure, OpenStack
	rule("169.254.170.2/32", "cloud_metadata", forbidden),   // AWS ECS task credentials
	rule("169.254.0.0/16", "link_local", forbidden),
	rule("172.16.0.0/12", "private", internal),
	rule("192.0.0.0/24", "ietf_protocol", restricted),
	rule("192.0.2.0/24", "documentation", restricted),
	rule("192.88.99.0/24", "reserved", restricted), // deprecated 6to4 relay anycast
	rule("192.168.0.0/16", "private", internal),
	rule("198.18.0.0/15", "benchmarking", restricted),
	rule("198.51.100.0/24", "documentation", restricted),
	rule("203.0.113.0/24", "documentation", restricted),
	rule("224.0.0.0/4", "multicast", forbidden),
	rule("255.255.255.255/32", "broadcast", forbidden),
	rule("240.0.0.0/4", "reserved", restricted),
	// IPv6 (IPv4-mapped addresses are unmapped before the lookup).
	rule("::/128", "unspecified", forbidden),
	rule("::1/128", "loopback", restricted),
	rule("64:ff9b:1::/48", "nat64_local", internal),
	rule("100::/64", "discard_only", restricted),
	rule("2001:2::/48", "benchmarking", restricted),
	rule("2001:db8::/32", "documentation", restricted),
	rule("3fff::/20", "documentation", restricted),
	rule("fd00:ec2::254/128", "cloud_metadata", forbidden), // AWS IMDS over IPv6
	rule("fc00::/7", "unique_local", internal),
	rule("fe80::/10", "link_local", forbidden),
	rule("ff00::/8", "multicast", forbidden),
}

// embedding is an IPv6 range that carries an IPv4 address the packet is bound for.
type embedding struct {
	prefix netip.Prefix
	name   string
	ipv4   func(a [16]byte) netip.Addr
	// denyAll also denies embeddings of public addresses (a deprecated form that
	// no real destination uses).
	denyAll bool
}

var embeddings = []embedding{
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), name: "nat64", ipv4: low32},
	{prefix: netip.MustParsePrefix("2002::/16"), name: "6to4", ipv4: func(a [16]byte) netip.Addr {
		return netip.AddrFrom4([4]byte(a[2:6]))
	}},
	{prefix: netip.MustParsePrefix("2001::/32"), name: "teredo", ipv4: func(a [16]byte) netip.Addr {
		// The Teredo client's public address is stored with every bit inverted.
		return netip.AddrFrom4([4]byte{^a[12], ^a[13], ^a[14], ^a[15]})
	}},
	{prefix: netip.MustParsePrefix("::/96"), name: "ipv4_compatible", ipv4: low32, denyAll: true},
}

func low32(a [16]byte) netip.Addr { return netip.AddrFrom4([4]byte(a[12:16])) }

// globalUnicast is the only IPv6 range allocated for global unicast; everything
// outside it that no rule names is reserved by the IETF.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// Classify reports whether ip is on the deny list and why (for example "loopback",
// "private", "cloud_metadata", "nat64:loopback"). The zone is ignored and an
// IPv4-mapped IPv6 address is classified as the IPv4 address it is. An allowlist may
// still exempt a denied address; Classify does not consult one.
func Classify(ip netip.Addr) (reason string, denied bool) {
	v := classify(ip)
	return v.reason, v.class != public
}

func classify(ip netip.Addr) verdict {
	if !ip.IsValid() {
		return verdict{reason: "invalid", class: forbidden}
	}
	ip = ip.WithZone("").Unmap()
	for _, r := range rules {
		if r.prefix.Contains(ip) {
			return r.verdict
		}
	}
	if ip.Is4() {
		return verdict{}
	}
	for _, e := range embeddings {
		if e.prefix.Contains(ip) {
			return classifyEmbedded(e, e.ipv4(ip.As16()))
		}
	}
	if !globalUnicast.Contains(ip) {
		return verdict{reason: "reserved", class: restricted}
	}
	return verdict{}
}

// classifyEmbedded denies an embedding of a denied IPv4 address. Only an address entry
// for the IPv6 form itself may exempt it; forbidden stays forbidden.
func classifyEmbedded(e embedding, ipv4 netip.Addr) verdict {
	inner := classify(ipv4)
	switch {
	case inner.class != public:
		return verdict{reason: e.name + ":" + inner.reason, class: max(inner.class, restricted)}
	case e.denyAll:
		return verdict{reason: e.name, class: restricted}
	default:
		return verdict{}
	}
}
