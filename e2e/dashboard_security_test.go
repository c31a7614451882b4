package e2e_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// page is one answer of the dashboard to a client that follows no redirect.
type page struct {
	status int
	header http.Header
	body   string
}

// visit sends one dashboard request to svc with Host host ("" for svc's address),
// the session cookie (if any), a form body (if not nil) and extra header pairs.
func visit(t *testing.T, svc *harness.Service, method, path, host, cookie string, form url.Values, headers ...string) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, svc.URL+path, body)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "handoff_ops_session", Value: cookie})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return page{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// signIn logs in on svc from its own origin and returns the session cookie's value.
func signIn(t *testing.T, svc *harness.Service) string {
	t.Helper()
	p := visit(t, svc, http.MethodPost, "/ops/login", "", "", url.Values{"token": {harness.OpsToken}}, "Origin", svc.URL)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == "handoff_ops_session" {
			return c.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOn(t *testing.T, p page) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(p.body)
	require.NotNil(t, m, "the page has a CSRF token (status %d)", p.status)
	return m[1]
}

// Two finance replicas on one database: the first answers on its loopback address
// (no DASHBOARD_URL) and trusts no proxy; the second is the dashboard of
// http://dashboard.test/ops/ behind a proxy on 127.0.0.1. The steps run in order on
// the one pair of replicas: the throttle's comes last, as it locks 127.0.0.1 out.
func TestDashboardSessionsAndRequestChecksAcrossReplicas(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	first := env.Finance
	second := env.NewFinance(t, map[string]string{
		"DISPATCH_ENABLED": "false",
		"DASHBOARD_URL":    "http://dashboard.test/ops/",
		"TRUSTED_PROXIES":  "127.0.0.1/32",
	})
	second.Start(t)
	const secondHost = "dashboard.test"

	t.Run("after logout the old cookie is refused on every replica", func(t *testing.T) {
		cookie := signIn(t, first)
		require.Equal(t, http.StatusOK, visit(t, second, http.MethodGet, "/ops/", secondHost, cookie, nil).status)
		overview := visit(t, first, http.MethodGet, "/ops/", "", cookie, nil)
		require.Equal(t, http.StatusOK, overview.status)

		p := visit(t, first, http.MethodPost, "/ops/logout", "", cookie, url.Values{"csrf": {csrfOn(t, overview)}}, "Origin", first.URL)
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		for _, r := range []struct {
			svc  *harness.Service
			host string
		}{{first, ""}, {second, secondHost}} {
			p := visit(t, r.svc, http.MethodGet, "/ops/", r.host, cookie, nil)
			require.Equal(t, http.StatusSeeOther, p.status, "replica %s", r.svc.URL)
			require.True(t, strings.HasPrefix(p.header.Get("Location"), "/ops/login"))
		}
	})

	t.Run("a POST with the CSRF token only in the query is 403", func(t *testing.T) {
		cookie := signIn(t, first)
		token := csrfOn(t, visit(t, first, http.MethodGet, "/ops/", "", cookie, nil))
		p := visit(t, first, http.MethodPost, "/ops/logout?csrf="+url.QueryEscape(token), "", cookie, url.Values{}, "Origin", first.URL)
		require.Equal(t, http.StatusForbidden, p.status)
		require.Equal(t, http.StatusOK, visit(t, first, http.MethodGet, "/ops/", "", cookie, nil).status, "still signed in")
	})

	t.Run("a request with a foreign Host is refused", func(t *testing.T) {
		require.Equal(t, http.StatusMisdirectedRequest, visit(t, first, http.MethodGet, "/ops/login", "evil.example", "", nil).status)
		require.Equal(t, http.StatusMisdirectedRequest, visit(t, second, http.MethodGet, "/ops/login", "", "", nil).status,
			"the second answers only DASHBOARD_URL's host")
		require.Equal(t, http.StatusOK, visit(t, second, http.MethodGet, "/ops/login", secondHost, "", nil).status)
		p := visit(t, second, http.MethodPost, "/ops/login", secondHost, "", url.Values{"token": {harness.OpsToken}},
			"Origin", "http://evil.example")
		require.Equal(t, http.StatusForbidden, p.status, "a POST from a foreign origin")
	})

	t.Run("the 11th wrong token within a minute from one address gets 429", func(t *testing.T) {
		wrong := url.Values{"token": {"wrong-token-0123456789"}}
		viaProxy := func(client string, form url.Values) page {
			return visit(t, second, http.MethodPost, "/ops/login", secondHost, "", form,
				"Origin", "http://"+secondHost, "X-Forwarded-For", client)
		}
		for i := range 10 {
			require.Equal(t, http.StatusUnauthorized, viaProxy("203.0.113.7", wrong).status, "attempt %d", i+1)
		}
		p := viaProxy("203.0.113.7", url.Values{"token": {harness.OpsToken}})
		require.Equal(t, http.StatusTooManyRequests, p.status, "refused without looking at the token")
		require.Equal(t, http.StatusUnauthorized, viaProxy("203.0.113.8", wrong).status, "another address behind the proxy")

		// The first trusts no proxy: its X-Forwarded-For is ignored and 127.0.0.1 is the
		// client, as it is of the second's requests without the header. Alternating
		// replicas, the count is shared through the database.
		direct := func(i int) page {
			if i%2 == 0 {
				return visit(t, first, http.MethodPost, "/ops/login", "", "", wrong, "Origin", first.URL, "X-Forwarded-For", "203.0.113.7")
			}
			return visit(t, second, http.MethodPost, "/ops/login", secondHost, "", wrong, "Origin", "http://"+secondHost)
		}
		for i := range 10 {
			require.Equal(t, http.StatusUnauthorized, direct(i).status, "attempt %d", i+1)
		}
		p = direct(0)
		require.Equal(t, http.StatusTooManyRequests, p.status)
		secs, err := strconv.Atoi(p.header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, secs >= 1 && secs <= 60, secs)
		require.Contains(t, p.body, "Too many wrong tokens")
		// A log line may be written just after its answer was sent.
		logged := func(s *harness.Service, re string) {
			require.Eventually(t, func() bool { return regexp.MustCompile(re).MatchString(s.Log()) },
				5*time.Second, 10*time.Millisecond, re)
		}
		logged(first, `"msg":"dashboard login refused".*"remote":"127\.0\.0\.1"`)
		logged(first, `"msg":"dashboard login throttled".*"remote":"127\.0\.0\.1"`)
		logged(second, `"msg":"dashboard login refused".*"remote":"203\.0\.113\.7"`)
	})
}
