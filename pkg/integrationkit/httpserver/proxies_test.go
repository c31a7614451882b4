package httpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/httpserver"
)

func TestParseProxies(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"", " ", "10.0.0.0/8", "10.0.0.0/8, 192.0.2.7", "2001:db8::/32,::1", "127.0.0.1/32,"} {
		_, err := httpserver.ParseProxies(spec)
		require.NoError(t, err, spec)
	}
	for spec, why := range map[string]string{
		"10.1.2.3/8":   "host bits",
		"0.0.0.0/0":    "every address",
		"::/0":         "every address",
		"proxy.local":  "neither",
		"10.0.0.0/33":  "neither",
		"fe80::1%eth0": "neither",
	} {
		_, err := httpserver.ParseProxies(spec)
		require.ErrorContains(t, err, why, spec)
	}
}

// The server below is reached over loopback, so its peer is always 127.0.0.1.
func TestForwardingHeadersAreBelievedOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, proxies, xff, proto string
		ip, scheme                string
	}{
		{name: "no proxies, no headers", ip: "127.0.0.1", scheme: "http"},
		{name: "no proxies: headers ignored, loopback included", xff: "203.0.113.9", proto: "https", ip: "127.0.0.1", scheme: "http"},
		{name: "peer not trusted", proxies: "10.0.0.0/8", xff: "203.0.113.9", proto: "https", ip: "127.0.0.1", scheme: "http"},
		{name: "trusted peer", proxies: "127.0.0.1/32", xff: "203.0.113.9", proto: "https", ip: "203.0.113.9", scheme: "https"},
		{name: "a client's own XFF entry is passed over", proxies: "127.0.0.1", xff: "198.51.100.1, 203.0.113.9", ip: "203.0.113.9", scheme: "http"},
		{name: "a chain of trusted proxies", proxies: "127.0.0.0/8,10.0.0.0/8", xff: "203.0.113.9, 10.1.1.1", ip: "203.0.113.9", scheme: "http"},
		{name: "the nearest proxy's proto wins", proxies: "127.0.0.1/32", proto: "https, http", ip: "127.0.0.1", scheme: "http"},
		{name: "garbage in XFF", proxies: "127.0.0.1/32", xff: "not-an-ip", ip: "127.0.0.1", scheme: "http"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := httpserver.ParseProxies(tc.proxies)
			require.NoError(t, err)
			e := httpserver.New(slog.New(slog.DiscardHandler))
			p.Apply(e)
			e.GET("/who", func(c echo.Context) error { return c.String(http.StatusOK, c.RealIP()+" "+c.Scheme()) })
			srv := httptest.NewServer(e)
			t.Cleanup(srv.Close)

			req, err := http.NewRequest(http.MethodGet, srv.URL+"/who", nil)
			require.NoError(t, err)
			if tc.xff != "" {
				req.Header.Set("X-Forwarded-For", tc.xff)
			}
			if tc.proto != "" {
				req.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.ip+" "+tc.scheme, string(body))
		})
	}
}
