package auth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/auth"
)

const (
	opsToken   = "ops-token-0123456789abcdef"
	clerkToken = "clerk-token-0123456789abc"
)

func tokens(t *testing.T, spec string) auth.Tokens {
	t.Helper()
	tk, err := auth.ParseTokens(spec, "clerk", "ops")
	require.NoError(t, err)
	return tk
}

func TestLoginMakesASessionThatNeverHoldsTheToken(t *testing.T) {
	t.Parallel()
	tk := tokens(t, "ops:"+opsToken+",clerk:"+clerkToken)
	now := time.Now()
	value, principal, err := tk.Login(opsToken, now.Add(time.Hour), "ops")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(principal, "ops:"))
	require.NotContains(t, value, opsToken)

	got, ok := tk.Session(value, now, "ops")
	require.True(t, ok)
	require.Equal(t, principal, got)

	again, _, err := tk.Login(opsToken, now.Add(time.Hour), "ops")
	require.NoError(t, err)
	require.NotEqual(t, value, again, "each login gets its own session")
}

func TestLoginRefusesBadTokensAndRoles(t *testing.T) {
	t.Parallel()
	tk := tokens(t, "ops:"+opsToken+",clerk:"+clerkToken)
	exp := time.Now().Add(time.Hour)
	_, _, err := tk.Login("ops-token-0123456789abcdeX", exp, "ops")
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	_, _, err = tk.Login("", exp, "ops")
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	_, _, err = tk.Login(clerkToken, exp, "ops")
	require.ErrorIs(t, err, auth.ErrForbidden)
}

func TestSessionRefusesWhatItDidNotIssue(t *testing.T) {
	t.Parallel()
	tk := tokens(t, "ops:"+opsToken+",clerk:"+clerkToken)
	now := time.Now()
	value, _, err := tk.Login(opsToken, now.Add(time.Hour), "ops")
	require.NoError(t, err)
	clerk, _, err := tk.Login(clerkToken, now.Add(time.Hour), "clerk")
	require.NoError(t, err)

	payload, mac, _ := strings.Cut(strings.TrimPrefix(value, "s1."), ".")
	otherPayload, _, _ := strings.Cut(strings.TrimPrefix(clerk, "s1."), ".")
	cases := map[string]string{
		"empty":            "",
		"no prefix":        strings.TrimPrefix(value, "s1."),
		"no mac":           "s1." + payload,
		"swapped payload":  "s1." + otherPayload + "." + mac,
		"flipped mac byte": "s1." + payload + "." + flip(mac),
		"not base64":       "s1.***." + mac,
	}
	for name, v := range cases {
		_, ok := tk.Session(v, now, "ops")
		require.False(t, ok, name)
	}
	_, ok := tk.Session(value, now.Add(time.Hour), "ops")
	require.False(t, ok, "expired")
	_, ok = tk.Session(clerk, now, "ops")
	require.False(t, ok, "another role")
	_, ok = tokens(t, "ops:ops-token-rotated-000000000").Session(value, now, "ops")
	require.False(t, ok, "the token was rotated out")
	_, ok = tokens(t, "ops:"+opsToken).Session(value, now, "ops")
	require.True(t, ok, "another replica with the same token accepts it")
}

func flip(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}
