package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/egress/egresstest"
)

// hangingResolver never answers: a DNS server that swallows the query.
type hangingResolver struct{}

func (hangingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// failingResolver answers every lookup with a plain error, as a custom resolver may.
type failingResolver struct{}

func (failingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("server misbehaving")
}

// A lookup that fails, whether the name does not exist, the resolver errs or the DNS
// server never answers, ends within the dialer's Timeout (not the request's) as a
// *net.DNSError: the dispatcher classifies it dns_error and retries it, counted.
func TestFailedLookupsAreBoundedDNSErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		resolver egress.Resolver
		timeout  bool
	}{
		{"NXDOMAIN", newResolver(nil), false},
		{"resolver error", failingResolver{}, false},
		{"DNS server hangs", hangingResolver{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := egress.New(egress.Config{Resolver: c.resolver, Timeout: 300 * time.Millisecond})
			client := egress.NewClient(d, egress.ClientConfig{Timeout: 30 * time.Second})
			t.Cleanup(client.CloseIdleConnections)
			start := time.Now()
			resp, err := client.Post("https://logistics.example/webhooks", "application/json", strings.NewReader("{}"))
			if resp != nil {
				_ = resp.Body.Close()
			}
			require.Error(t, err)
			require.Less(t, time.Since(start), 5*time.Second, "bounded by the dialer's Timeout, not the request's 30 s")
			var dnsErr *net.DNSError
			require.ErrorAs(t, err, &dnsErr)
			require.Equal(t, c.timeout, dnsErr.IsTimeout)
			require.Equal(t, "dns_error", delivery.ErrorClass(err))
			require.Equal(t, delivery.Decision{Action: delivery.Retry, Counted: true, Reason: "dns_error"},
				delivery.Classify(0, nil, err, time.Now()))
		})
	}
}

// Response headers beyond 64 KiB (here 2 MiB) are refused by the client's
// MaxResponseHeaderBytes instead of being read into memory.
func TestHugeResponseHeadersAreRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Padding", strings.Repeat("a", 2<<20))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	client := newClient(t, "127.0.0.1/32", newResolver(nil))
	resp, err := client.Get(srv.URL)
	if resp != nil {
		_ = resp.Body.Close()
	}
	require.ErrorContains(t, err, "server response headers exceeded 65536 bytes")
}

// Backslashes never move a request to another host: the URL either does not parse,
// is refused before any connection, or names the same host with the backslashes in
// its path.
func TestBackslashesNeverChangeTheHost(t *testing.T) {
	t.Parallel()
	trap := egresstest.Listen(t, "127.0.0.2:0")
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	allowed, other := srv.Listener.Addr().String(), "127.0.0.2:"+trap.Port()
	client := newClient(t, "127.0.0.1/32", newResolver(nil))
	for _, raw := range []string{
		`http://` + allowed + `\@` + other + `/`,
		`http://` + other + `\@` + allowed + `/`,
		`http:\\` + other + `\x`,
		`http://127.0.0.2\.example.com/`,
		`http://` + allowed + `\\` + other + `/`,
	} {
		u, err := url.Parse(raw)
		if err == nil {
			err = egress.CheckURL(u)
			egresstest.RequireBlocked(t, err, "invalid_address")
			_, err = client.Get(raw)
			egresstest.RequireBlocked(t, err, "invalid_address")
		}
		require.Error(t, err, raw)
	}
	resp, err := client.Get(`http://` + allowed + `/\\` + other + `/`)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.EqualValues(t, 1, hits.Load(), "a backslash in the path stays in the path")
	require.Zero(t, trap.Accepted())
}

// With HTTP_PROXY, HTTPS_PROXY and ALL_PROXY pointing at a listener and NO_PROXY empty,
// a guarded client still connects straight to the checked address: the proxy, which
// would dial on the client's behalf past the guard, sees no connection.
func TestEnvironmentProxyIsIgnored(t *testing.T) {
	t.Parallel()
	egresstest.RequireProxyIgnored(t, requestWithProxyEnvironment)
}

func requestWithProxyEnvironment(t *testing.T, port string) {
	target := "http://logistics.test:" + port + "/webhooks"
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader("{}"))
	require.NoError(t, err)

	client := newClient(t, "127.0.0.1/32", newResolver(map[string][]string{"logistics.test": {"127.0.0.1"}}))
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
