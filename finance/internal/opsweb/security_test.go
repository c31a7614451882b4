package opsweb_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

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

	_, err := b.db.NewRaw(`UPDATE finance_dashboard_sign_in_attempts SET attempted_at = attempted_at - interval '61 seconds'`).Exec(b.ctx)
	require.NoError(t, err)
	b.login(t)
}
