package egress

import (
	"cmp"
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

// ClientConfig bounds a client made by NewClient and tunes its connection pool. Zero
// fields take the defaults.
type ClientConfig struct {
	// Timeout bounds one request from the dial to the last byte of the body read
	// (default 10 s).
	Timeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response headers once the request
	// is written (default: Timeout).
	ResponseHeaderTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake (default 5 s).
	TLSHandshakeTimeout time.Duration
	// MaxResponseHeaderBytes bounds the response headers (default 64 KiB); larger
	// headers fail the request after at most that much is read.
	MaxResponseHeaderBytes int64
	// MaxIdleConns and MaxIdleConnsPerHost bound the idle connections kept for reuse
	// (defaults 100 and 2).
	MaxIdleConns        int
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes a connection idle this long (default 60 s).
	IdleConnTimeout time.Duration
}

func (c ClientConfig) withDefaults() ClientConfig {
	c.Timeout = cmp.Or(c.Timeout, 10*time.Second)
	c.ResponseHeaderTimeout = cmp.Or(c.ResponseHeaderTimeout, c.Timeout)
	c.TLSHandshakeTimeout = cmp.Or(c.TLSHandshakeTimeout, 5*time.Second)
	c.MaxResponseHeaderBytes = cmp.Or(c.MaxResponseHeaderBytes, 64<<10)
	c.MaxIdleConns = cmp.Or(c.MaxIdleConns, 100)
	c.MaxIdleConnsPerHost = cmp.Or(c.MaxIdleConnsPerHost, 2)
	c.IdleConnTimeout = cmp.Or(c.IdleConnTimeout, 60*time.Second)
	return c
}

// NewClient returns the HTTP client of every outgoing call of the kit and the
// services; only the healthcheck's request to the process's own /readyz is made
// without it. Its connections all go through d (nil is New(Config{}): public
// destinations on 80 and 443 only), so each address is checked as it is dialed, and
// the dial is bounded by d's Timeout. It never uses a proxy from the environment (a proxy would dial on its
// behalf, past the guard), never follows a redirect (the 3xx is the answer), refuses
// URLs that CheckURL refuses before any connection, and bounds the TLS handshake, the
// wait for the response headers, their size, and each whole request, body included,
// as cfg says. Read bodies with ReadBody to bound their size too.
func NewClient(d *Dialer, cfg ClientConfig) *http.Client {
	if d == nil {
		d = New(Config{})
	}
	cfg = cfg.withDefaults()
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    cfg.TLSHandshakeTimeout,
		ResponseHeaderTimeout:  cfg.ResponseHeaderTimeout,
		MaxResponseHeaderBytes: cfg.MaxResponseHeaderBytes,
		MaxIdleConns:           cfg.MaxIdleConns,
		MaxIdleConnsPerHost:    cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:        cfg.IdleConnTimeout,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: urlGuard{next: tr},
		Timeout:   cfg.Timeout,
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
