package egress_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/egress/egresstest"
)

// seen records the Host header and TLS server name of every request a server got.
type seen struct {
	hosts, serverNames chan string
}

func (s seen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hosts <- r.Host
	if r.TLS != nil {
		s.serverNames <- r.TLS.ServerName
	}
	http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
}

func newSeen() seen { return seen{hosts: make(chan string, 16), serverNames: make(chan string, 16)} }

func newClient(t *testing.T, allow string, dns *resolver) *http.Client {
	t.Helper()
	c := egress.NewClient(egress.New(egress.Config{Allow: allowlist(t, allow), Resolver: dns}), egress.ClientConfig{Timeout: 5 * time.Second})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestClientRefusesBadURLsBeforeAnyConnection(t *testing.T) {
	t.Parallel()
	ln := egresstest.Listen(t, "127.0.0.1:0")
	c := newClient(t, "127.0.0.1/32", newResolver(nil))
	cases := map[string]string{
		"ftp://" + ln.Addr().String() + "/x":              "scheme_not_allowed",
		"gopher://" + ln.Addr().String() + "/x":           "scheme_not_allowed",
		"file:///etc/passwd":                              "scheme_not_allowed",
		"http://user:secret@" + ln.Addr().String() + "/x": "userinfo_not_allowed",
		"http://a@169.254.169.254/":                       "userinfo_not_allowed",
	}
	for raw, reason := range cases {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, raw, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := c.Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		egresstest.RequireBlocked(t, err, reason)
		require.NotContains(t, err.Error(), "secret", "credentials never reach an error")
	}
	require.Zero(t, ln.Accepted())
}

// A 302 to the metadata endpoint is the answer, never followed; the Host header is the
// URL's host, though the connection went to the checked address.
func TestClientKeepsTheHostAndNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	rec := newSeen()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	dns := newResolver(map[string][]string{"logistics.test": {"127.0.0.1"}})
	c := newClient(t, "127.0.0.1/32", dns)

	resp, err := c.Get("http://logistics.test:" + strconv.Itoa(port) + "/hook")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "logistics.test:"+strconv.Itoa(port), <-rec.hosts)
	require.Empty(t, rec.hosts, "the redirect was not followed")
}

// Over TLS the server name and the certificate check stay those of the URL's host
// (httptest's certificate is for example.com), although the dial was pinned to
// 127.0.0.1.
func TestTLSServerNameIsTheURLHost(t *testing.T) {
	t.Parallel()
	rec := newSeen()
	srv := httptest.NewTLSServer(rec)
	t.Cleanup(srv.Close)
	dns := newResolver(map[string][]string{"example.com": {"127.0.0.1"}})
	d := egress.New(egress.Config{Allow: allowlist(t, "127.0.0.1/32"), Resolver: dns})
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tr := &http.Transport{DialContext: d.DialContext, TLSClientConfig: &tls.Config{RootCAs: roots}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	port := srv.Listener.Addr().(*net.TCPAddr).Port
	resp, err := c.Get("https://example.com:" + strconv.Itoa(port) + "/")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "example.com", <-rec.serverNames)
	require.Equal(t, "example.com:"+strconv.Itoa(port), <-rec.hosts)
}

// The dispatcher's classifier sees a refusal through net/http's wrapping and
// dead-letters it with reason blocked_destination, paging on-call.
func TestDeliveryDeadLettersABlockedDestination(t *testing.T) {
	t.Parallel()
	c := newClient(t, "127.0.0.1/32", newResolver(nil))
	_, err := c.Post("http://169.254.169.254/latest/meta-data/", "application/json", strings.NewReader("{}"))
	require.Error(t, err)
	var uerr *url.Error
	require.ErrorAs(t, err, &uerr, "wrapped by net/http")
	dec := delivery.Classify(0, nil, err, time.Now())
	require.Equal(t, delivery.Decision{Action: delivery.DeadLetter, Page: true, Reason: "blocked_destination"}, dec)
	require.Equal(t, "blocked_destination", delivery.ErrorClass(err))
}
