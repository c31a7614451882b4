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

// Two finance replicas on one database. The steps run in order on the one pair of
// replicas: the throttle's comes last, as it locks 127.0.0.1 out of signing in.
func TestDashboardSessionsAndSignInAcrossReplicas(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	first := env.Finance
	second := env.NewFinance(t, map[string]string{"DISPATCH_ENABLED": "false"})
	second.Start(t)

	t.Run("after logout the old cookie is refused on every replica", func(t *testing.T) {
		cookie := signIn(t, first)
		require.Equal(t, http.StatusOK, visit(t, second, http.MethodGet, "/ops/", "", cookie, nil).status)
		overview := visit(t, first, http.MethodGet, "/ops/", "", cookie, nil)
		require.Equal(t, http.StatusOK, overview.status)

		p := visit(t, first, http.MethodPost, "/ops/logout", "", cookie, url.Values{"csrf": {csrfOn(t, overview)}}, "Origin", first.URL)
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		for _, svc := range []*harness.Service{first, second} {
			p := visit(t, svc, http.MethodGet, "/ops/", "", cookie, nil)
			require.Equal(t, http.StatusSeeOther, p.status, "replica %s", svc.URL)
			require.True(t, strings.HasPrefix(p.header.Get("Location"), "/ops/login"))
		}
	})

	t.Run("the 11th wrong token within a minute from one address gets 429", func(t *testing.T) {
		wrong := url.Values{"token": {"wrong-token-0123456789"}}
		attempt := func(svc *harness.Service, form url.Values) page {
			return visit(t, svc, http.MethodPost, "/ops/login", "", "", form, "Origin", svc.URL)
		}
		for i := range 10 {
			// Alternating replicas: the count is shared through the database.
			require.Equal(t, http.StatusUnauthorized, attempt([]*harness.Service{first, second}[i%2], wrong).status, "attempt %d", i+1)
		}
		p := attempt(first, url.Values{"token": {harness.OpsToken}})
		require.Equal(t, http.StatusTooManyRequests, p.status, "refused without looking at the token")
		secs, err := strconv.Atoi(p.header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, secs >= 1 && secs <= 60, secs)
		require.Contains(t, p.body, "Too many wrong tokens")
		require.Equal(t, http.StatusTooManyRequests, attempt(second, wrong).status)
		require.Regexp(t, `"msg":"dashboard login throttled".*"remote":"127\.0\.0\.1"`, first.Log())
	})
}
