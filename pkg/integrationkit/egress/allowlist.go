package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Allowlist holds the only exceptions to the deny list. The zero value exempts
// nothing: every internal destination is refused.
//
// Entries, separated by commas or spaces:
//
//   - An address entry, a CIDR or a single IP, optionally with a port
//     ("127.0.0.1/32", "10.0.0.0/8:8082", "10.1.2.3:8082", "[fd00::7]:8082",
//     "fd00::/8"): addresses inside it may be dialed on that port, or on any port
//     when none is given, whatever their class, loopback included.
//   - A host entry, a DNS name optionally with a port ("logistics.internal",
//     "logistics.internal:8082"): a URL naming exactly that host may be dialed on
//     that port (on 80 and 443 when none is given), and its name may resolve to
//     private-network addresses (RFC 1918, CGNAT, unique-local IPv6). A name never
//     exempts loopback, reserved or embedded-IPv4 addresses: trusting DNS that far
//     would let a rebinding record reach them; use an address entry instead.
//
// Cloud metadata (169.254.169.254 and its kin), link-local, unspecified, multicast and
// broadcast addresses are never exempted, not even by a CIDR that covers them, so
// "0.0.0.0/0" cannot open the metadata endpoint; an entry that lies entirely inside
// such a range is rejected by ParseAllowlist.
type Allowlist struct {
	entries []entry
}

type entry struct {
	prefix netip.Prefix // address entries
	host   string       // host entries: lower case, no trailing dot
	port   uint16       // 0: any port (address entries), 80 and 443 (host entries)
}

// ParseAllowlist reads the entries of spec (see Allowlist). An empty spec is the empty
// allowlist.
func ParseAllowlist(spec string) (Allowlist, error) {
	var a Allowlist
	for _, field := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		e, err := parseEntry(field)
		if err != nil {
			return Allowlist{}, fmt.Errorf("entry %q: %w", field, err)
		}
		a.entries = append(a.entries, e)
	}
	return a, nil
}

func parseEntry(s string) (entry, error) {
	if addr, bits, ok := strings.Cut(s, "/"); ok {
		length, port, hasPort := strings.Cut(bits, ":")
		p, err := netip.ParsePrefix(addr + "/" + length)
		if err != nil {
			return entry{}, errors.New("not a CIDR such as 10.0.0.0/8 or 10.0.0.0/8:8082")
		}
		return addressEntry(p.Masked(), port, hasPort)
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return singleAddressEntry(ip, "", false)
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return singleAddressEntry(ap.Addr(), strconv.Itoa(int(ap.Port())), true)
	}
	return hostEntry(s)
}

func singleAddressEntry(ip netip.Addr, port string, hasPort bool) (entry, error) {
	if ip.Zone() != "" {
		return entry{}, errors.New("an address entry takes no zone")
	}
	return addressEntry(netip.PrefixFrom(ip, ip.BitLen()), port, hasPort)
}

func addressEntry(p netip.Prefix, port string, hasPort bool) (entry, error) {
	if p.Addr().Is4In6() {
		return entry{}, errors.New("write IPv4-mapped addresses in IPv4 form")
	}
	if r, ok := forbiddenRange(p); ok {
		return entry{}, fmt.Errorf("%s is %s, which is never allowed", r.prefix, r.reason)
	}
	return entry{prefix: p}.withPort(port, hasPort)
}

// forbiddenRange returns the never-allowed range that contains all of p, if any.
func forbiddenRange(p netip.Prefix) (rangeRule, bool) {
	for _, r := range rules {
		if r.class == forbidden && r.prefix.Bits() <= p.Bits() && r.prefix.Contains(p.Addr()) {
			return r, true
		}
	}
	return rangeRule{}, false
}

func hostEntry(s string) (entry, error) {
	host, port, hasPort := strings.Cut(s, ":")
	host = normalizeHost(host)
	if err := validHostname(host); err != nil {
		return entry{}, err
	}
	return entry{host: host}.withPort(port, hasPort)
}

// withPort returns e limited to port when the entry names one (hasPort), else e as it
// is.
func (e entry) withPort(port string, hasPort bool) (entry, error) {
	if !hasPort {
		return e, nil
	}
	n, err := parsePort(port)
	if err != nil {
		return entry{}, err
	}
	e.port = n
	return e, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// validHostname accepts a DNS name of letters, digits and hyphens whose last label is
// not numeric (that would be an IP address in another notation).
func validHostname(host string) error {
	if host == "" || len(host) > 253 {
		return errors.New("not a CIDR, an IP address or a host name")
	}
	if endsInNumber(host) {
		return errors.New("looks like an IP address; write it as a dotted IPv4 address or a CIDR")
	}
	for label := range strings.SplitSeq(host, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("not a CIDR, an IP address or a host name")
		}
		for i := range len(label) {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return errors.New("not a CIDR, an IP address or a host name")
			}
		}
	}
	return nil
}

// normalizeHost lower-cases a host name and drops the trailing dot of a fully
// qualified one, so "Logistics.Internal." matches "logistics.internal".
func normalizeHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// endsInNumber reports whether host would be read as an IPv4 address by some resolver
// (the WHATWG URL rule): its last label is decimal digits or 0x-prefixed hex. Such
// hosts ("2130706433", "0x7f000001", "0177.0.0.1", "127.1", "127.0.0.1.") are
// resolved to loopback by getaddrinfo but looked up in DNS by Go's own resolver.
func endsInNumber(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// coversAddress reports whether an address entry admits ip on port.
func (a Allowlist) coversAddress(ip netip.Addr, port uint16) bool {
	for _, e := range a.entries {
		if e.prefix.IsValid() && e.prefix.Contains(ip) && (e.port == 0 || e.port == port) {
			return true
		}
	}
	return false
}

// coversHost reports whether a host entry admits host (normalized) on port.
func (a Allowlist) coversHost(host string, port uint16) bool {
	for _, e := range a.entries {
		if e.host != "" && e.host == host && (e.port == port || e.port == 0 && defaultPort(port)) {
			return true
		}
	}
	return false
}

// defaultPort reports whether port is one a public destination may use.
func defaultPort(port uint16) bool { return port == 80 || port == 443 }
