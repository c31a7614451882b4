package opsweb

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// site is the address the dashboard answers to.
type site struct {
	// scheme and host (canonicalHost) of Config.URL; host is "" when the dashboard is
	// local: it answers any loopback host, with the connection's scheme.
	scheme, host string
}

func parseSite(raw string) (site, error) {
	if raw == "" {
		return site{}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return site{}, fmt.Errorf("opsweb: URL %q is not an absolute http(s) URL", raw)
	}
	if name := u.Hostname(); name == "" || isLoopback(name) || isUnspecified(name) {
		return site{}, nil
	}
	return site{scheme: u.Scheme, host: canonicalHost(u.Host, u.Scheme)}, nil
}

// origin returns the dashboard's own origin for c, and false when c is addressed to a
// host that is not the dashboard's.
func (s site) origin(c echo.Context) (string, bool) {
	if s.host != "" {
		return s.scheme + "://" + s.host, canonicalHost(c.Request().Host, s.scheme) == s.host
	}
	scheme := c.Scheme()
	host := canonicalHost(c.Request().Host, scheme)
	name, _, _ := net.SplitHostPort(host)
	return scheme + "://" + host, isLoopback(name)
}

// originOf returns the origin of an absolute http(s) URL (an Origin or Referer header)
// in the form of site.origin, or "".
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + canonicalHost(u.Host, u.Scheme)
}

// canonicalHost is host:port in lower case with the scheme's default port written
// out, so that two spellings of one address compare equal.
func canonicalHost(hostport, scheme string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}

// isLoopback reports whether a host name stays on this machine: localhost or a
// loopback address.
func isLoopback(name string) bool {
	if strings.EqualFold(name, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(name)
	return err == nil && a.Unmap().IsLoopback()
}

// isUnspecified reports whether a host name is 0.0.0.0 or ::, as a listen address
// naming every interface is.
func isUnspecified(name string) bool {
	a, err := netip.ParseAddr(name)
	return err == nil && a.IsUnspecified()
}

// sameOrigin answers only requests addressed to the dashboard's host; any other Host
// gets 421, so a name an attacker points at this server (DNS rebinding) reaches
// nothing. A POST must come from a page of the dashboard's own origin: the browser's
// Origin, or without it the Referer, must be that origin, and Fetch Metadata must not
// say cross-site. It guards the login form, which has no session yet.
func (d *Dashboard) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		own, ok := d.site.origin(c)
		if !ok {
			return errMisdirected
		}
		c.Set(originKey, own)
		if c.Request().Method != http.MethodPost {
			return next(c)
		}
		h := c.Request().Header
		from := h.Get("Origin")
		if from == "" {
			from = h.Get("Referer")
		}
		if originOf(from) != own || h.Get("Sec-Fetch-Site") == "cross-site" {
			return errForbidden
		}
		return next(c)
	}
}

// secure reports whether the dashboard's own origin of c is https, so cookies must be
// Secure.
func secure(c echo.Context) bool {
	own, _ := c.Get(originKey).(string)
	return strings.HasPrefix(own, "https://")
}
