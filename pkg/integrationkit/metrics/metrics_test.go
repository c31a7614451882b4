package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/metrics"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/retention"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

func scrape(t *testing.T, e *echo.Echo) string {
	t.Helper()
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metrics.Path, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(body)
}

// A sender's /metrics: outcomes and latencies from the observer, depth and circuits
// read from the database at scrape time.
func TestSenderSeries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _, store := outboxtest.Setup(t)
	_, err := db.ExecContext(ctx, breaker.Schema("circuits"))
	require.NoError(t, err)
	br, err := breaker.New(breaker.Config{Table: "circuits", Threshold: 1})
	require.NoError(t, err)
	p, err := br.Acquire(ctx, db, "http://down")
	require.NoError(t, err)
	_, err = br.Failure(ctx, db, "http://down", p)
	require.NoError(t, err)
	for i, agg := range []string{"a", "b"} {
		_, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: agg, Sequence: 1,
			IdempotencyKey: agg, Destination: "http://x", Payload: i})
		require.NoError(t, err)
	}
	_, err = db.NewRaw(`UPDATE kit_outbox SET created_at = now() - interval '90 seconds' WHERE aggregate_key = 'a'`).Exec(ctx)
	require.NoError(t, err)

	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewOutboxCollector("svc", db, store, br))
	d := metrics.NewDelivery(reg, "svc")
	rec := outbox.Record{CreatedAt: time.Now().Add(-2 * time.Second)}
	d.Settled(ctx, rec, outbox.Outcome{Status: outbox.StatusDelivered, Sent: true, StatusCode: 200, Duration: 30 * time.Millisecond})
	d.Settled(ctx, rec, outbox.Outcome{Status: outbox.StatusPending, Sent: true, ErrorClass: "timeout"})
	d.Settled(ctx, rec, outbox.Outcome{Status: outbox.StatusPending})
	d.CircuitChanged(ctx, "http://down", breaker.Opened, rec)
	e := echo.New()
	metrics.Register(e, reg)

	body := scrape(t, e)
	for _, series := range []string{
		`svc_deliveries_total{answer="200",outcome="delivered"} 1`,
		`svc_deliveries_total{answer="timeout",outcome="retry"} 1`,
		`svc_deliveries_total{answer="none",outcome="deferred"} 1`,
		`svc_delivery_duration_seconds_count 2`,
		`svc_delivery_end_to_end_seconds_count 1`,
		`svc_outbox_events{status="pending"} 2`,
		`svc_outbox_events{status="failed"} 0`,
		`svc_breaker_state{destination="http://down",state="open"} 1`,
		`svc_breaker_state{destination="http://down",state="closed"} 0`,
		`svc_circuit_transitions_total{destination="http://down",transition="opened"} 1`,
		`go_goroutines`,
	} {
		require.Contains(t, body, series)
	}
	require.Regexp(t, `svc_outbox_oldest_pending_seconds (9\d|1\d\d)(\.\d+)?(e\+\d+)?\n`, body)
}

// A receiver's /metrics: answers by status, duplicates and latency of the webhook
// route only.
func TestWebhookSeries(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	w := metrics.NewWebhook(reg, "recv")
	e := echo.New()
	e.Use(w.Middleware("/hook"))
	e.POST("/hook", func(c echo.Context) error {
		if c.QueryParam("bad") != "" {
			return echo.NewHTTPError(http.StatusUnauthorized)
		}
		w.Processed(c.QueryParam("dup") != "")
		return c.NoContent(http.StatusOK)
	})
	e.GET("/other", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	metrics.Register(e, reg)
	for _, target := range []string{"/hook", "/hook?dup=1", "/hook?bad=1"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, target, nil))
	}
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/other", nil))

	body := scrape(t, e)
	for _, series := range []string{
		`recv_webhook_requests_total{status="200"} 2`,
		`recv_webhook_requests_total{status="401"} 1`,
		`recv_webhook_duplicates_total 1`,
		`recv_webhook_duration_seconds_count 3`,
	} {
		require.Contains(t, body, series)
	}
}

// Retention runs by result, each result present from the start.
func TestRetentionSeries(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	r := metrics.NewRetention(reg, "svc")
	e := echo.New()
	metrics.Register(e, reg)
	require.Contains(t, scrape(t, e), `svc_retention_runs_total{result="failed"} 0`)

	ctx := context.Background()
	r.Ran(ctx, retention.Report{Counts: []retention.Count{{Task: "t", Rows: 3}}}, nil)
	r.Ran(ctx, retention.Report{Skipped: true}, nil)
	r.Ran(ctx, retention.Report{}, errors.New("connection lost"))
	r.Ran(ctx, retention.Report{}, nil)
	body := scrape(t, e)
	for _, series := range []string{
		`svc_retention_runs_total{result="ok"} 2`,
		`svc_retention_runs_total{result="skipped"} 1`,
		`svc_retention_runs_total{result="failed"} 1`,
	} {
		require.Contains(t, body, series)
	}
}
