package opsweb_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/finance/internal/signin"
)

// sessionCookie is the session cookie b's browser holds.
func (b *bundle) sessionCookie(t *testing.T) *http.Cookie {
	t.Helper()
	u, err := url.Parse(b.srv.URL + "/ops/")
	require.NoError(t, err)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "handoff_ops_session" {
			return c
		}
	}
	t.Fatal("no session cookie")
	return nil
}

// useCookie puts c in b's browser, as a copied cookie would be.
func (b *bundle) useCookie(t *testing.T, c *http.Cookie) {
	t.Helper()
	u, err := url.Parse(b.srv.URL + "/ops/")
	require.NoError(t, err)
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: "/ops/"}})
}

func TestLogoutEndsTheSessionOnEveryReplica(t *testing.T) {
	t.Parallel()
	a := setup(t)
	other := a.replica(t, options{})
	a.login(t)
	cookie := a.sessionCookie(t)
	other.useCookie(t, cookie)
	require.Equal(t, http.StatusOK, other.get(t, "/ops/").status, "every replica admits the session")

	token := csrfOf(t, a.get(t, "/ops/").body)
	p := a.post(t, "/ops/logout", url.Values{"csrf": {token}}, a.srv.URL)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ops/login", p.location)
	require.Contains(t, p.header.Get("Set-Cookie"), "Max-Age=0")

	require.Equal(t, http.StatusSeeOther, other.get(t, "/ops/").status, "the other replica refuses it at once")
	a.useCookie(t, cookie)
	require.Equal(t, http.StatusSeeOther, a.get(t, "/ops/").status, "the old cookie replayed")
}

func TestRemovingATokenEndsItsSessions(t *testing.T) {
	t.Parallel()
	const otherOps = "ops-token-another-0123456789"
	a := setupWith(t, options{tokens: "ops:" + opsToken + ",ops:" + otherOps})
	restarted := a.replica(t, options{tokens: "ops:" + otherOps})
	a.login(t)
	restarted.useCookie(t, a.sessionCookie(t))
	require.Equal(t, http.StatusSeeOther, restarted.get(t, "/ops/").status, "its token is gone from API_TOKENS")
	require.Equal(t, http.StatusOK, a.get(t, "/ops/").status, "a replica still holding the token admits it")
}

func TestSignInIsThrottledPerAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range signin.DefaultPerClient {
		require.Equal(t, http.StatusUnauthorized, b.post(t, "/ops/login", url.Values{"token": {"wrong-token-0123456789"}}, b.srv.URL).status)
	}
	for _, token := range []string{"wrong-token-0123456789", opsToken} {
		p := b.post(t, "/ops/login", url.Values{"token": {token}}, b.srv.URL)
		require.Equal(t, http.StatusTooManyRequests, p.status, "the 11th attempt is refused unchecked")
		secs, err := strconv.Atoi(p.header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, secs >= 1 && secs <= 60, secs)
		require.Contains(t, p.body, "Too many wrong tokens from your address")
		require.Empty(t, p.header.Get("Set-Cookie"))
	}
	require.Contains(t, b.log.String(), `"msg":"dashboard login throttled","remote":"127.0.0.1"`)

	_, err := b.DB.NewRaw(`UPDATE finance_dashboard_sign_in_attempts SET attempted_at = attempted_at - interval '61 seconds'`).Exec(b.Ctx)
	require.NoError(t, err)
	b.login(t)
}

// Behind a trusted proxy, clients are told apart by X-Forwarded-For: one address's
// failures do not lock out another's correct token, until the global ceiling.
func TestOthersFailuresDoNotLockOutACorrectTokenBelowTheCeiling(t *testing.T) {
	t.Parallel()
	b := setupWith(t, options{proxies: "127.0.0.1/32"})
	login := func(client, token string) page {
		return b.postWith(t, "/ops/login", url.Values{"token": {token}}, "Origin", b.srv.URL, "X-Forwarded-For", client)
	}
	for range signin.DefaultPerClient {
		require.Equal(t, http.StatusUnauthorized, login("203.0.113.7", "wrong-token-0123456789").status)
	}
	require.Equal(t, http.StatusTooManyRequests, login("203.0.113.7", opsToken).status)
	require.Equal(t, http.StatusSeeOther, login("198.51.100.2", opsToken).status)

	_, err := b.DB.NewRaw(`INSERT INTO finance_dashboard_sign_in_attempts (client)
		SELECT '192.0.2.' || g FROM generate_series(1, ?) AS g`, signin.DefaultGlobal-signin.DefaultPerClient).Exec(b.Ctx)
	require.NoError(t, err)
	p := login("198.51.100.3", opsToken)
	require.Equal(t, http.StatusTooManyRequests, p.status, "past the global ceiling everyone waits")
	require.Contains(t, p.body, "Too many wrong tokens from everywhere")
	require.NotEmpty(t, p.header.Get("Retry-After"))
}

func TestForwardingHeadersCountOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, proxies, remote string
		secure                bool
	}{
		{name: "no trusted proxy", proxies: "", remote: "127.0.0.1"},
		{name: "another proxy", proxies: "10.0.0.0/8", remote: "127.0.0.1"},
		{name: "the peer is a trusted proxy", proxies: "127.0.0.1/32", remote: "203.0.113.9", secure: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, options{proxies: tc.proxies})
			p := b.postWith(t, "/ops/login", url.Values{"token": {"wrong-token-0123456789"}},
				"Origin", b.srv.URL, "X-Forwarded-For", "203.0.113.9")
			require.Equal(t, http.StatusUnauthorized, p.status)
			require.Contains(t, b.log.String(), `"msg":"dashboard login refused","remote":"`+tc.remote+`"`)

			// Through a TLS-terminating proxy the browser's origin is https.
			https := strings.Replace(b.srv.URL, "http://", "https://", 1)
			p = b.postWith(t, "/ops/login", url.Values{"token": {opsToken}}, "Origin", https, "X-Forwarded-Proto", "https")
			if !tc.secure {
				require.Equal(t, http.StatusForbidden, p.status, "X-Forwarded-Proto is not believed")
				return
			}
			require.Equal(t, http.StatusSeeOther, p.status, p.body)
			require.Contains(t, p.header.Get("Set-Cookie"), "Secure")
		})
	}
}

func TestCSRFTokenIsReadFromTheFormBodyOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, id := b.failed(t, "HTTP 400")
	b.login(t)
	token := csrfOf(t, b.get(t, "/ops/").body)
	q := "?csrf=" + url.QueryEscape(token)
	require.Equal(t, http.StatusForbidden, b.post(t, "/ops/events/"+id.String()+"/retry"+q, url.Values{}, b.srv.URL).status)
	require.Equal(t, http.StatusForbidden, b.post(t, "/ops/logout"+q, url.Values{}, b.srv.URL).status)
	require.Equal(t, http.StatusOK, b.get(t, "/ops/").status, "still signed in")
	require.Equal(t, http.StatusSeeOther, b.post(t, "/ops/events/"+id.String()+"/retry",
		url.Values{"csrf": {token}, "reason": {"the receiver is fixed"}}, b.srv.URL).status)

	other := setup(t)
	p := other.post(t, "/ops/login?token="+opsToken, url.Values{}, other.srv.URL)
	require.Equal(t, http.StatusUnauthorized, p.status, "a token in the URL is not read")
}

func TestRequestsForAnotherHostAreRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, url, host string
		want            int
	}{
		{"local: the listen address", "", "", http.StatusOK},
		{"local: localhost", "", "localhost:8081", http.StatusOK},
		{"local: IPv6 loopback", "", "[::1]:8081", http.StatusOK},
		{"local: another loopback address", "http://127.0.0.1:8081/ops/", "127.0.0.2:9999", http.StatusOK},
		{"local: unspecified listen address", "http://0.0.0.0:8081/ops/", "localhost", http.StatusOK},
		{"local: listen address without a host", "http://:8081/ops/", "127.0.0.1:8081", http.StatusOK},
		{"local: IPv6 unspecified", "http://[::]:8081/ops/", "localhost:8081", http.StatusOK},
		{"local: a foreign name", "", "evil.example", http.StatusMisdirectedRequest},
		{"local: a name rebound to loopback", "http://127.0.0.1:8081/ops/", "rebind.evil.example:8081", http.StatusMisdirectedRequest},
		{"local: a private address", "", "10.0.0.5:8081", http.StatusMisdirectedRequest},
		{"URL: its host", "https://ops.example.com/ops/", "ops.example.com", http.StatusOK},
		{"URL: its host, port written", "https://ops.example.com/ops/", "ops.example.com:443", http.StatusOK},
		{"URL: its host, other case", "https://ops.example.com/ops/", "OPS.Example.com", http.StatusOK},
		{"URL: a port of its own", "http://ops.internal:8081/ops/", "ops.internal:8081", http.StatusOK},
		{"URL: another port", "https://ops.example.com/ops/", "ops.example.com:8443", http.StatusMisdirectedRequest},
		{"URL: the listen address", "https://ops.example.com/ops/", "", http.StatusMisdirectedRequest},
		{"URL: localhost", "https://ops.example.com/ops/", "localhost", http.StatusMisdirectedRequest},
		{"URL: a foreign name", "https://ops.example.com/ops/", "evil.example", http.StatusMisdirectedRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, options{url: tc.url, host: tc.host})
			p := b.get(t, "/ops/login")
			require.Equal(t, tc.want, p.status)
			if tc.want != http.StatusOK {
				require.Contains(t, p.body, "DASHBOARD_URL")
				require.Equal(t, tc.want, b.get(t, "/ops").status, "the redirect to /ops/ too")
				require.Equal(t, tc.want, b.get(t, "/ops/events/"+uuid.NewString()).status, "and pages behind the login")
			}
		})
	}
}

func TestPostsFromAnotherOriginAreRefused(t *testing.T) {
	t.Parallel()
	const dashboard = "https://ops.example.com/ops/"
	cases := []struct {
		name    string
		headers []string
		want    int
	}{
		{"its origin", []string{"Origin", "https://ops.example.com"}, http.StatusSeeOther},
		{"its origin, port written", []string{"Origin", "https://ops.example.com:443"}, http.StatusSeeOther},
		{"its page as Referer", []string{"Referer", "https://ops.example.com/ops/login"}, http.StatusSeeOther},
		{"plain http", []string{"Origin", "http://ops.example.com"}, http.StatusForbidden},
		{"a foreign origin", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"a foreign Referer", []string{"Referer", "https://evil.example/ops/login"}, http.StatusForbidden},
		{"a foreign origin, its Referer", []string{"Origin", "https://evil.example", "Referer", "https://ops.example.com/ops/"}, http.StatusForbidden},
		{"an opaque origin", []string{"Origin", "null"}, http.StatusForbidden},
		{"neither", nil, http.StatusForbidden},
		{"cross-site by Fetch Metadata", []string{"Origin", "https://ops.example.com", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, options{url: dashboard, host: "ops.example.com"})
			p := b.postWith(t, "/ops/login", url.Values{"token": {opsToken}}, tc.headers...)
			require.Equal(t, tc.want, p.status, p.body)
			if tc.want == http.StatusSeeOther {
				require.Contains(t, p.header.Get("Set-Cookie"), "Secure", "the dashboard's URL is https")
			} else {
				require.Empty(t, p.header.Get("Set-Cookie"))
			}
		})
	}
}
