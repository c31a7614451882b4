package auth_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/problem"
)

const (
	clerkBearer     = "clerk-bearer-0123456789abcdef"
	opsBearer       = "ops-bearer-0123456789abcdefgh"
	warehouseBearer = "warehouse-bearer-0123456789ab"
)

// server mounts one route per role set behind Require and echoes the principal.
func server(t *testing.T) *echo.Echo {
	t.Helper()
	tk, err := auth.ParseTokens("clerk:"+clerkBearer+", ops:"+opsBearer+",warehouse:"+warehouseBearer,
		"clerk", "ops", "warehouse")
	require.NoError(t, err)
	e := echo.New()
	e.HTTPErrorHandler = problem.Handler(slog.New(slog.DiscardHandler))
	principal := func(c echo.Context) error { return c.String(http.StatusOK, auth.Principal(c)) }
	e.GET("/clerk", principal, tk.Require("clerk"))
	e.GET("/ops-or-warehouse", principal, tk.Require("ops", "warehouse"))
	return e
}

func get(e *echo.Echo, path, authorization string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestRolesAreEnforced(t *testing.T) {
	t.Parallel()
	e := server(t)
	cases := []struct {
		path, token string
		status      int
	}{
		{"/clerk", clerkBearer, http.StatusOK},
		{"/clerk", opsBearer, http.StatusForbidden},
		{"/clerk", warehouseBearer, http.StatusForbidden},
		{"/ops-or-warehouse", opsBearer, http.StatusOK},
		{"/ops-or-warehouse", warehouseBearer, http.StatusOK},
		{"/ops-or-warehouse", clerkBearer, http.StatusForbidden},
	}
	for _, c := range cases {
		rec := get(e, c.path, "Bearer "+c.token)
		require.Equal(t, c.status, rec.Code, "%s with %s", c.path, c.token[:5])
		if c.status == http.StatusForbidden {
			require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		}
	}
}

// A missing token is 401 with a bare Bearer challenge; a wrong one is 401 with
// invalid_token. Near misses (a prefix, one byte off, one byte longer, another role's
// token with the right length) are all just wrong: tokens are compared as SHA-256
// digests in constant time, so neither length nor a shared prefix matters.
func TestUnauthenticatedRequestsAre401(t *testing.T) {
	t.Parallel()
	e := server(t)
	for _, header := range []string{"", "Basic " + clerkBearer, "Bearer", "Bearer  ", clerkBearer} {
		rec := get(e, "/clerk", header)
		require.Equal(t, http.StatusUnauthorized, rec.Code, header)
		require.Equal(t, "Bearer", rec.Header().Get("WWW-Authenticate"), header)
	}
	last := clerkBearer[len(clerkBearer)-1]
	for _, token := range []string{
		clerkBearer[:len(clerkBearer)-1], clerkBearer + "0", clerkBearer[:len(clerkBearer)-1] + string(last+1),
		strings.ToUpper(clerkBearer), "clerk-bearer-",
	} {
		rec := get(e, "/clerk", "Bearer "+token)
		require.Equal(t, http.StatusUnauthorized, rec.Code, token)
		require.Equal(t, `Bearer error="invalid_token"`, rec.Header().Get("WWW-Authenticate"))
		require.NotContains(t, rec.Body.String(), token, "the answer never echoes the token")
	}
	require.Equal(t, http.StatusOK, get(e, "/clerk", "bearer "+clerkBearer).Code, "the scheme is case-insensitive")
}

// The principal names the role and a digest prefix, never the token; the parsed token
// set holds digests only, so printing it (or a config struct holding it) leaks nothing.
func TestTokensNeverAppearInPrincipalsOrValues(t *testing.T) {
	t.Parallel()
	e := server(t)
	rec := get(e, "/clerk", "Bearer "+clerkBearer)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Regexp(t, `^clerk:[0-9a-f]{12}$`, rec.Body.String())
	require.NotContains(t, rec.Body.String(), clerkBearer)

	tk, err := auth.ParseTokens("clerk:"+clerkBearer, "clerk")
	require.NoError(t, err)
	for _, format := range []string{"%v", "%+v", "%#v"} {
		require.NotContains(t, fmt.Sprintf(format, tk), clerkBearer[:12])
	}
	require.Equal(t, map[string]int{"clerk": 1}, tk.Roles())
}

func TestParseTokensRejectsWeakOrUnknownEntries(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ spec, want string }{
		"unknown role":        {"admin:" + clerkBearer, "unknown role"},
		"short token":         {"clerk:short-token", "shorter than 16 characters"},
		"no colon":            {clerkBearer, "entry 1 is not role:token"},
		"empty token":         {"clerk:", "entry 1 is not role:token"},
		"one character":       {"clerk:" + strings.Repeat("a", 40), "fewer than 8 different characters"},
		"two characters":      {"clerk:" + strings.Repeat("ab", 20), "fewer than 8 different characters"},
		"seven characters":    {"clerk:" + strings.Repeat("bearer0", 4), "fewer than 8 different characters"},
		"inner space":         {"clerk:bearer 0123456789abcdef", "white space"},
		"tab":                 {"clerk:bearer\t0123456789abcdef", "white space"},
		"shared by two roles": {"clerk:" + clerkBearer + ",ops:" + opsBearer + ",ops:" + clerkBearer, `entries 1 (role "clerk") and 3 (role "ops") have the same token`},
		"repeated in a role":  {"clerk:" + clerkBearer + ",clerk:erp:" + clerkBearer, "entries 1 (role \"clerk\") and 2"},
	} {
		_, err := auth.ParseTokens(tc.spec, "clerk", "ops")
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), "bearer-0123", "an error never echoes a token")
		require.NotContains(t, err.Error(), "aaaa", "an error never echoes a token")
	}
	none, err := auth.ParseTokens("", "clerk")
	require.NoError(t, err)
	e := echo.New()
	e.HTTPErrorHandler = problem.Handler(slog.New(slog.DiscardHandler))
	e.GET("/", func(c echo.Context) error { return c.NoContent(http.StatusOK) }, none.Require("clerk"))
	require.Equal(t, http.StatusUnauthorized, get(e, "/", "Bearer "+clerkBearer).Code, "no tokens admit nobody")
}

// A token may name its caller ("role:name:token"): the principal and the caller are
// then the name, the same for every token of it, so a rotation keeps the caller. A
// token without a name is its own caller: two unnamed tokens of a role never share.
func TestNamedTokensKeepTheirCallerAcrossRotation(t *testing.T) {
	t.Parallel()
	const old, rotated, other = "bearer-old-0123456789", "bearer-new-0123456789", "bearer-anon-0123456789"
	tk, err := auth.ParseTokens("clerk:erp-batch:"+old+",clerk:erp-batch:"+rotated+",clerk:"+other, "clerk")
	require.NoError(t, err)
	e := echo.New()
	e.GET("/", func(c echo.Context) error {
		return c.String(http.StatusOK, auth.Principal(c)+" "+auth.Caller(c))
	}, tk.Require("clerk"))
	require.Equal(t, "clerk:erp-batch clerk:erp-batch", get(e, "/", "Bearer "+old).Body.String())
	require.Equal(t, "clerk:erp-batch clerk:erp-batch", get(e, "/", "Bearer "+rotated).Body.String())
	require.Regexp(t, `^(clerk:[0-9a-f]{12}) clerk:[0-9a-f]{12}$`, get(e, "/", "Bearer "+other).Body.String())
	p, c, _ := strings.Cut(get(e, "/", "Bearer "+other).Body.String(), " ")
	require.Equal(t, p, c, "an unnamed token's caller is its principal")
	for _, bad := range []string{"clerk:Bad Name:" + old, "clerk:erp:" + old + ":x", "clerk:erp:"} {
		_, err := auth.ParseTokens(bad, "clerk")
		require.Error(t, err, bad)
	}
}

// CheckToken's floor: 16 characters, 8 of them different, none white space.
func TestCheckTokenStrength(t *testing.T) {
	t.Parallel()
	require.NoError(t, auth.CheckToken("0123456789abcdef"))
	require.NoError(t, auth.CheckToken("ops-e2e-token-0123456789ab"))
	require.NoError(t, auth.CheckToken("abcdefghabcdefgh"), "8 different characters are enough")
	for _, weak := range []string{"", "0123456789abcde", strings.Repeat("x", 64), "abcdefgabcdefgabcdefg", "0123456789 abcdef", "0123456789abcdef\x00"} {
		require.Error(t, auth.CheckToken(weak), "%q", weak)
	}
}
