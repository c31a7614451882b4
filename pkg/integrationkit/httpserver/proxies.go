package httpserver

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// Proxies are the reverse proxies whose word a server takes about its clients: the
// client address in X-Forwarded-For and the scheme in X-Forwarded-Proto. A proxy is
// known by the address it connects from. The zero value trusts nobody: the client is
// the connection's peer and the scheme the connection's.
type Proxies struct {
	nets []*net.IPNet
}

// ParseProxies reads comma-separated CIDRs or single addresses, such as
// "10.0.0.0/8, 192.0.2.7"; "" trusts nobody. A CIDR must name its network
// (10.0.0.0/8, not 10.1.2.3/8) and may not span every address.
func ParseProxies(spec string) (Proxies, error) {
	var p Proxies
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		prefix, err := parsePrefix(item)
		if err != nil {
			return Proxies{}, err
		}
		p.nets = append(p.nets, &net.IPNet{IP: prefix.Addr().AsSlice(), Mask: net.CIDRMask(prefix.Bits(), prefix.Addr().BitLen())})
	}
	return p, nil
}

func parsePrefix(item string) (netip.Prefix, error) {
	if !strings.Contains(item, "/") {
		addr, err := netip.ParseAddr(item)
		if err != nil || addr.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR nor an IP address", item)
		}
		return netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()), nil
	}
	prefix, err := netip.ParsePrefix(item)
	switch {
	case err != nil:
		return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR nor an IP address", item)
	case prefix != prefix.Masked():
		return netip.Prefix{}, fmt.Errorf("%q has host bits set: write %s", item, prefix.Masked())
	case prefix.Bits() == 0:
		return netip.Prefix{}, fmt.Errorf("%q trusts every address, so any client could name its own address", item)
	}
	return prefix, nil
}

// Apply makes e believe forwarding headers only on connections from p. Context.RealIP
// is the nearest address in X-Forwarded-For, read from the right, that is not one of
// p, when the peer is one of p, and the peer otherwise; Context.Scheme is https on a
// TLS connection, X-Forwarded-Proto when the peer is one of p, and http otherwise.
// Loopback, private and link-local peers are trusted only when p lists them. New
// applies the zero Proxies.
func (p Proxies) Apply(e *echo.Echo) {
	if len(p.nets) == 0 {
		e.IPExtractor = echo.ExtractIPDirect()
		e.SchemeExtractor = echo.ExtractSchemeDirect()
		return
	}
	trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range p.nets {
		trust = append(trust, echo.TrustIPRange(n))
	}
	e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	e.SchemeExtractor = echo.ExtractSchemeFromHeaders(trust...)
}
