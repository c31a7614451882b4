package webhook_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/webhook"
)

// The signed content is "id.timestamp.body": the signer refuses an id that is empty or
// contains '.', and sets no header at all then; the timestamp is always whole seconds,
// so it never contains a '.' whatever the time's fraction.
func TestSignerRefusesADotInTheSignedContent(t *testing.T) {
	t.Parallel()
	signer := webhook.NewSigner([][]byte{current})
	for _, id := range []string{"", ".", "msg.1", "msg_1.", ".msg_1", "1700000000.msg"} {
		t.Run("id "+id, func(t *testing.T) {
			t.Parallel()
			_, err := signer.Sign(id, now, body)
			require.ErrorIs(t, err, webhook.ErrInvalidID)
			h := http.Header{}
			require.ErrorIs(t, signer.SetHeaders(h, id, now, body), webhook.ErrInvalidID)
			require.Empty(t, h, "a refused message gets no header")
		})
	}
	digits := regexp.MustCompile(`^-?[0-9]+$`)
	for _, ts := range []time.Time{now.Add(999 * time.Millisecond), now.Add(time.Nanosecond), time.Unix(-1, 500)} {
		h := http.Header{}
		require.NoError(t, signer.SetHeaders(h, "msg_1", ts, body))
		require.Regexp(t, digits, h.Get(webhook.HeaderTimestamp), "whole seconds only")
	}
}
