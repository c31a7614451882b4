package logisticsclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/finance/internal/logisticsclient"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/egress/egresstest"
	"handoff/pkg/integrationkit/logging"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "ops-token-0123456789abcdef"

func client(t *testing.T, h http.HandlerFunc, tok string) *logisticsclient.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := logisticsclient.New(logisticsclient.Config{BaseURL: srv.URL + "/", Token: tok, Timeout: time.Second,
		Guard: egresstest.Guard(t, "127.0.0.1/32")})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestProcessedEventsSendsTheQueryAndDecodesThePage(t *testing.T) {
	t.Parallel()
	inv := uuid.New()
	from := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := client(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != logisticsclient.Path || r.Header.Get("Authorization") != "Bearer "+token ||
			r.URL.Query().Get("invoice_id") != inv.String() || r.URL.Query().Get("from") != "2030-01-02T03:04:05Z" ||
			r.URL.Query().Get("limit") != "7" || r.URL.Query().Get("cursor") != "c1" ||
			r.Header.Get("X-Request-ID") != "corr-1" {
			http.Error(w, r.URL.String(), http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items":[{"idempotency_key":"invoice.paid:x:p","event_type":"invoice.paid",
			"result":"applied","received_at":"2030-01-02T03:04:06Z"}],"next_cursor":"c2",
			"shipment":{"state":"waiting","history":[{"from_state":null,"to_state":"waiting","cause":"invoice.paid"}]}}`))
	}, token)
	ctx := logging.WithCorrelationID(context.Background(), "corr-1")
	page, err := c.ProcessedEvents(ctx, logisticsclient.Query{InvoiceID: inv, From: from, Limit: 7, Cursor: "c1"})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "applied", page.Items[0].Result)
	require.Equal(t, "c2", page.NextCursor)
	require.Equal(t, "waiting", page.Shipment.State)
	require.Empty(t, page.Shipment.History[0].From)
}

func TestProcessedEventsReportsFailures(t *testing.T) {
	t.Parallel()
	_, err := client(t, nil, "").ProcessedEvents(context.Background(), logisticsclient.Query{})
	require.ErrorIs(t, err, logisticsclient.ErrNotConfigured)

	c := client(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("limit") {
		case "1":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"type":"https://handoff.dev/problems/forbidden"}`))
		case "2":
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
		case "3":
			<-r.Context().Done()
		case "5":
			_, _ = w.Write([]byte(`{"items":[],"pad":"` + strings.Repeat("x", 5<<20) + `"}`))
		default:
			_, _ = w.Write([]byte(`not json`))
		}
	}, token)
	var se *logisticsclient.StatusError
	_, err = c.ProcessedEvents(context.Background(), logisticsclient.Query{Limit: 1})
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusForbidden, se.Status)
	require.Contains(t, se.Type, "forbidden")
	_, err = c.ProcessedEvents(context.Background(), logisticsclient.Query{Limit: 2})
	require.ErrorAs(t, err, &se, "redirects are never followed")
	require.Equal(t, http.StatusFound, se.Status)
	start := time.Now()
	_, err = c.ProcessedEvents(context.Background(), logisticsclient.Query{Limit: 3})
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second, "the timeout bounds the call")
	_, err = c.ProcessedEvents(context.Background(), logisticsclient.Query{Limit: 4})
	require.Error(t, err)
	require.False(t, errors.As(err, &se))
	_, err = c.ProcessedEvents(context.Background(), logisticsclient.Query{Limit: 5})
	require.ErrorIs(t, err, egress.ErrBodyTooLarge, "an answer over 4 MiB is refused, not cut and decoded")
}

func TestNewRefusesABadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:8082", "ftp://x", "/v1"} {
		_, err := logisticsclient.New(logisticsclient.Config{BaseURL: u})
		require.ErrorContains(t, err, "BaseURL", u)
	}
}

// Every call goes through the guard: a LOGISTICS_API_URL on an address it refuses
// (with the dev allowlist, or with none at all) is never dialed, and the call fails
// with the refusal.
func TestGuardRefusesBeforeAnyConnection(t *testing.T) {
	t.Parallel()
	trap := egresstest.Listen(t, "127.0.0.2:0")
	cases := []struct {
		name  string
		guard *egress.Dialer
	}{
		{"dev allowlist", egresstest.Guard(t, "127.0.0.1/32")},
		{"no guard given", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := logisticsclient.New(logisticsclient.Config{BaseURL: trap.URL(), Token: token, Guard: tc.guard})
			require.NoError(t, err)
			_, err = c.ProcessedEvents(context.Background(), logisticsclient.Query{})
			c.Close()
			egresstest.RequireBlocked(t, err, "loopback")
		})
	}
	require.Zero(t, trap.Accepted(), "nothing reached 127.0.0.2")
}
