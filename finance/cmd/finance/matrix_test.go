package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"handoff/migrations"
	"handoff/pkg/integrationkit/command/commandtest"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/webhook"
)

// With every connection of the API's pool held by payments waiting on a locked
// invoice, the dispatcher still delivers an event (written, say, by another replica):
// it has a pool of its own.
func TestDispatcherDeliversWhileTheAPIPoolIsExhausted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewURL(t, "finance", migrations.Finance())
	received := make(chan string, 16)
	logistics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.HasSuffix(r.URL.Path, "/batch") {
			http.NotFound(w, r) // no batch endpoint: the dispatcher sends single requests
			return
		}
		received <- r.Header.Get("X-Idempotency-Key")
	}))
	t.Cleanup(logistics.Close)
	addr := commandtest.FreeAddr(t)
	const clerk = "clerk-token-0123456789"
	env := map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": addr, "DB_MAX_CONNS": "2", "API_TOKENS": "clerk:" + clerk,
		"WEBHOOK_SECRET":        webhook.FormatSecret([]byte("matrix-secret-0123456789abcdef")),
		"LOGISTICS_WEBHOOK_URL": logistics.URL + "/webhooks/finance", "OUTBOUND_ALLOW": "127.0.0.1/32",
		"DISPATCH_INTERVAL": "200ms", "LOG_LEVEL": "error",
	}
	serveCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(serveCtx, []string{"serve"}, environ(env), io.Discard, io.Discard)
	}()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })
	api := "http://" + addr
	require.Eventually(t, func() bool { return statusOf(http.MethodGet, api+"/readyz", "", "") == http.StatusOK },
		30*time.Second, 20*time.Millisecond, "finance ready")

	invoiceID := issueInvoice(t, api, clerk)
	require.Equal(t, "invoice.issued:"+invoiceID, receive(t, received), "delivery works")

	// The observer asks pg_stat_activity outside any transaction: inside one it would
	// see a snapshot taken at its first look.
	observer, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = observer.Close(ctx) })
	// A long transaction locks the invoice; payments queue behind it, one per API
	// connection, until the pool is empty.
	holder, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close(ctx) })
	lock, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = lock.Exec(ctx, `SELECT 1 FROM invoices WHERE id = $1 FOR UPDATE`, invoiceID)
	require.NoError(t, err)
	paid := make(chan int, 4)
	for i := range 4 {
		go func() {
			paid <- statusOf(http.MethodPost, api+"/v1/invoices/"+invoiceID+"/payments", clerk,
				fmt.Sprintf(`{"payment_id":"pay-%d","amount_minor":1}`, i))
		}()
	}
	waiting := func() int {
		var n int
		require.NoError(t, observer.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return waiting() == 2 }, 10*time.Second, 10*time.Millisecond,
		"both API connections wait on the lock")

	key := "invoice.issued:" + uuid.NewString()
	_, err = observer.Exec(ctx, `INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination,
		aggregate_key, aggregate_seq) VALUES (gen_random_uuid(), 'invoice.issued', '{}', $1, $2, $3, 1)`,
		key, logistics.URL+"/webhooks/finance", uuid.NewString())
	require.NoError(t, err)
	_, err = observer.Exec(ctx, `SELECT pg_notify('finance_outbox', '')`)
	require.NoError(t, err)
	require.Equal(t, key, receive(t, received), "delivered with the API's pool exhausted")
	require.Equal(t, 2, waiting(), "the API's pool was still exhausted")

	require.NoError(t, lock.Rollback(ctx))
	for range 4 {
		require.NotZero(t, <-paid, "every payment was answered once the lock went")
	}
}

// statusOf sends a request and returns its status, or 0 when none came back.
func statusOf(method, url, token, body string) int {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// issueInvoice issues an invoice of 1 EUR through the API and returns its id.
func issueInvoice(t *testing.T, api, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, api+"/v1/invoices",
		strings.NewReader(`{"customer_id":"cust-pool","currency":"EUR","total_minor":1}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	var inv struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(body, &inv))
	return inv.ID
}

func receive(t *testing.T, received <-chan string) string {
	t.Helper()
	select {
	case key := <-received:
		return key
	case <-time.After(15 * time.Second):
		t.Fatal("nothing delivered")
		return ""
	}
}
