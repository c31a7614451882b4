package auth_test

import (
	"strings"
	"testing"

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
	value, principal, err := tk.Login(opsToken, "ops")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(principal, "ops:"))
	require.NotContains(t, value, opsToken)

	got, ok := tk.Session(value, "ops")
	require.True(t, ok)
	require.Equal(t, principal, got)

	again, _, err := tk.Login(opsToken, "ops")
	require.NoError(t, err)
	require.NotEqual(t, value, again, "each login gets its own session")
}

func TestLoginRefusesBadTokensAndRoles(t *testing.T) {
	t.Parallel()
	tk := tokens(t, "ops:"+opsToken+",clerk:"+clerkToken)
	_, _, err := tk.Login("ops-token-0123456789abcdeX", "ops")
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	_, _, err = tk.Login("", "ops")
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	_, _, err = tk.Login(clerkToken, "ops")
	require.ErrorIs(t, err, auth.ErrForbidden)
}

func TestSessionRefusesWhatItDidNotIssue(t *testing.T) {
	t.Parallel()
	tk := tokens(t, "ops:"+opsToken+",clerk:"+clerkToken)
	value, _, err := tk.Login(opsToken, "ops")
	require.NoError(t, err)
	clerk, _, err := tk.Login(clerkToken, "clerk")
	require.NoError(t, err)

	id, mac, _ := strings.Cut(strings.TrimPrefix(value, "s2."), ".")
	otherID, _, _ := strings.Cut(strings.TrimPrefix(clerk, "s2."), ".")
	cases := map[string]string{
		"empty":            "",
		"no prefix":        strings.TrimPrefix(value, "s2."),
		"old format":       "s1." + id + "." + mac,
		"no mac":           "s2." + id,
		"swapped id":       "s2." + otherID + "." + mac,
		"short id":         "s2." + id[:10] + "." + mac,
		"flipped mac byte": "s2." + id + "." + flip(mac),
		"not base64":       "s2.***." + mac,
	}
	for name, v := range cases {
		_, ok := tk.Session(v, "ops")
		require.False(t, ok, name)
	}
	_, ok := tk.Session(clerk, "ops")
	require.False(t, ok, "another role")
	_, ok = tokens(t, "ops:ops-token-rotated-000000000").Session(value, "ops")
	require.False(t, ok, "the token was rotated out")
	_, ok = tokens(t, "ops:"+opsToken).Session(value, "ops")
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
