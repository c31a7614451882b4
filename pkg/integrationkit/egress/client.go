package egress

import (
	"net/http"
	"net/url"
	"time"
)

// CheckURL admits absolute http and https URLs with a host and without userinfo
// (credentials in a URL end up in logs, and "http://a@169.254.169.254/" is a classic
// disguise). The host itself is judged when dialed.
func CheckURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return &BlockedError{Addr: u.Scheme + "://" + u.Host, Reason: "scheme_not_allowed"}
	case u.User != nil:
		return &BlockedError{Addr: u.Host, Reason: "userinfo_not_allowed"}
	case u.Host == "" || u.Opaque != "":
		return &BlockedError{Addr: u.Host, Reason: "invalid_address"}
	}
	return nil
}

// NewClient returns an HTTP client whose connections all go through d. It never uses
// an environment proxy, never follows a redirect (the 3xx is the answer), refuses URLs
// that CheckURL refuses, and bounds each request, body included, by timeout.
func NewClient(d *Dialer, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial on our behalf, past the guard
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		IdleConnTimeout:        60 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: urlGuard{next: tr},
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// urlGuard refuses requests whose URL CheckURL refuses, before any connection.
type urlGuard struct{ next http.RoundTripper }

func (g urlGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := CheckURL(req.URL); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, err
	}
	return g.next.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (g urlGuard) CloseIdleConnections() {
	if c, ok := g.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
