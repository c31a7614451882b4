// Package egress guards outgoing connections against server-side request forgery: a
// webhook sender is a confused deputy that would otherwise reach the cloud metadata
// endpoint, the database or an admin port on the sender's behalf.
//
// A Dialer resolves the destination once, refuses it unless every address passes the
// policy, dials exactly the addresses it checked, and checks again in the socket's
// control hook, right before connect, against the address actually dialed. DNS
// rebinding and time-of-check/time-of-use tricks therefore have nothing to exploit,
// while the URL's host still names the Host header and the TLS server name.
//
// The policy: addresses on the deny list (see Classify) are refused unless the
// Allowlist exempts them; public addresses may be dialed on ports 80 and 443 only,
// other ports need an allowlist entry. Host names whose last label is numeric
// ("2130706433", "127.1") are refused before any lookup. A refusal is a
// *BlockedError.
package egress

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// BlockedError is a destination refused by the policy. It is never worth retrying:
// only a configuration change can make the same destination pass.
type BlockedError struct {
	// Addr is the destination as requested (host:port) or, when refused at connect
	// time, the socket address.
	Addr string
	// IP is the refused address; it is zero when the host was refused before
	// resolution.
	IP netip.Addr
	// Reason names the rule: a Classify reason, "port_not_allowed",
	// "ambiguous_ip_notation", "invalid_address", "scheme_not_allowed" or
	// "userinfo_not_allowed".
	Reason string
}

func (e *BlockedError) Error() string {
	msg := "egress: destination " + e.Addr + " blocked: " + e.Reason
	if e.IP.IsValid() {
		msg += " (address " + e.IP.String() + ")"
	}
	return msg
}

// Resolver looks up the addresses of a host name; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config tunes a Dialer. Zero fields take the defaults.
type Config struct {
	// Allow lists the only exceptions to the deny list (default: none).
	Allow Allowlist
	// Resolver looks up host names (default net.DefaultResolver).
	Resolver Resolver
	// Timeout bounds the name lookup, and then the connect to each address (default
	// 5 s when not positive).
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period (default 30 s when not positive).
	KeepAlive time.Duration
	// WrapConn, when set, wraps every connection once it is established, after every
	// check: it cannot change where a connection goes (tests count the bytes read
	// through it).
	WrapConn func(net.Conn) net.Conn
}

// Dialer dials TCP connections that pass the egress policy. It is safe for concurrent
// use.
type Dialer struct {
	allow     Allowlist
	resolver  Resolver
	timeout   time.Duration
	keepAlive time.Duration
	wrap      func(net.Conn) net.Conn
}

// New returns a Dialer with cfg's policy.
func New(cfg Config) *Dialer {
	var resolver Resolver = net.DefaultResolver
	if cfg.Resolver != nil {
		resolver = cfg.Resolver
	}
	return &Dialer{
		allow:     cfg.Allow,
		resolver:  resolver,
		timeout:   positiveOr(cfg.Timeout, 5*time.Second),
		keepAlive: positiveOr(cfg.KeepAlive, 30*time.Second),
		wrap:      cfg.WrapConn,
	}
}

func positiveOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// destination is where a caller asked to go.
type destination struct {
	host string // normalized: lower case, no brackets, no trailing dot
	port uint16
	addr string // as requested
}

// DialContext connects to addr ("host:port") over network ("tcp", "tcp4" or "tcp6"),
// with the signature of net.Dialer.DialContext and http.Transport.DialContext. Every
// address the host resolves to must pass the policy, or none is dialed; they are then
// tried one after another in the resolver's order. A lookup that fails, or outlasts
// the Timeout, is a *net.DNSError.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	dst, err := parseDestination(network, addr)
	if err != nil {
		return nil, err
	}
	ips, err := d.checked(ctx, network, dst)
	if err != nil {
		return nil, err
	}
	conn, err := d.dialPinned(ctx, network, dst, ips)
	if err != nil || d.wrap == nil {
		return conn, err
	}
	return d.wrap(conn), nil
}

// Admits reports whether the policy lets addr ("host:port") be dialed now, resolving
// it like DialContext but connecting nowhere: a service checks its configured
// destinations at start with it, so a destination missing from the allowlist is said
// at once instead of as dead letters later.
func (d *Dialer) Admits(ctx context.Context, addr string) error {
	dst, err := parseDestination("tcp", addr)
	if err != nil {
		return err
	}
	_, err = d.checked(ctx, "tcp", dst)
	return err
}

// checked resolves dst and applies the policy to every address: all pass, or none.
func (d *Dialer) checked(ctx context.Context, network string, dst destination) ([]netip.Addr, error) {
	ips, err := d.resolve(ctx, network, dst)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if err := d.check(dst, ip); err != nil {
			return nil, err
		}
	}
	return ips, nil
}

func parseDestination(network, addr string) (destination, error) {
	invalid := &BlockedError{Addr: addr, Reason: "invalid_address"}
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return destination{}, invalid
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return destination{}, invalid
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return destination{}, invalid
	}
	return destination{host: normalizeHost(host), port: uint16(port), addr: addr}, nil
}

// resolve returns the addresses of dst's host, unmapped and without zones: the literal
// itself, or the resolver's answer. A numeric-looking name is refused here, before it
// reaches any resolver.
func (d *Dialer) resolve(ctx context.Context, network string, dst destination) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(dst.host); err == nil {
		return []netip.Addr{ip.WithZone("").Unmap()}, nil
	}
	if endsInNumber(dst.host) {
		return nil, &BlockedError{Addr: dst.addr, Reason: "ambiguous_ip_notation"}
	}
	lookupCtx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	ips, err := d.resolver.LookupNetIP(lookupCtx, "ip"+network[len("tcp"):], dst.host)
	if err != nil {
		return nil, dnsError(dst.host, err)
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: dst.host, IsNotFound: true}
	}
	for i, ip := range ips {
		ips[i] = ip.WithZone("").Unmap()
	}
	return ips, nil
}

// dnsError is err as a *net.DNSError, the type a caller classifies lookups by,
// whatever resolver produced it; the original error stays in its chain.
func dnsError(host string, err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return err
	}
	return &net.DNSError{Err: err.Error(), Name: host, IsTimeout: errors.Is(err, context.DeadlineExceeded), UnwrapErr: err}
}

// check applies the policy to one address of dst.
func (d *Dialer) check(dst destination, ip netip.Addr) error {
	v := classify(ip)
	if d.permits(dst, ip, v) {
		return nil
	}
	return &BlockedError{Addr: dst.addr, IP: ip, Reason: cmp.Or(v.reason, "port_not_allowed")}
}

func (d *Dialer) permits(dst destination, ip netip.Addr, v verdict) bool {
	switch {
	case v.class == forbidden:
		return false
	case d.allow.coversAddress(ip, dst.port):
		return true
	case v.class == restricted:
		return false
	case d.allow.coversHost(dst.host, dst.port):
		return true
	default:
		return v.class == public && defaultPort(dst.port)
	}
}

// dialPinned dials the checked addresses in order, never resolving again; the control
// hook checks each socket address right before connect.
func (d *Dialer) dialPinned(ctx context.Context, network string, dst destination, ips []netip.Addr) (net.Conn, error) {
	nd := &net.Dialer{Timeout: d.timeout, KeepAlive: d.keepAlive, ControlContext: d.control(dst)}
	var first error
	for _, ip := range ips {
		conn, err := nd.DialContext(ctx, network, netip.AddrPortFrom(ip, dst.port).String())
		if err == nil {
			return conn, nil
		}
		first = cmp.Or(first, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// control is the last word: it sees the address the socket is about to connect to.
func (d *Dialer) control(dst destination) func(ctx context.Context, network, address string, _ syscall.RawConn) error {
	return func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &BlockedError{Addr: address, Reason: "invalid_address"}
		}
		at := destination{host: dst.host, port: ap.Port(), addr: address}
		return d.check(at, ap.Addr().WithZone("").Unmap())
	}
}
