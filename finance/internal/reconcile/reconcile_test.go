package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/reconcile"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/pager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logistics stands in for logistics' ops API: it serves the processed events it holds,
// oldest first, two to a page, and insists on the ops token.
type logistics struct {
	mu     sync.Mutex
	events map[string]time.Time
}

func (l *logistics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/ops/processed-events" || r.Header.Get("Authorization") != "Bearer ops-token" {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	from, err1 := time.Parse(time.RFC3339Nano, r.URL.Query().Get("from"))
	to, err2 := time.Parse(time.RFC3339Nano, r.URL.Query().Get("to"))
	if err1 != nil || err2 != nil {
		http.Error(w, "bad window", http.StatusBadRequest)
		return
	}
	type item struct {
		IdempotencyKey string    `json:"idempotency_key"`
		ReceivedAt     time.Time `json:"received_at"`
	}
	var items []item
	l.mu.Lock()
	for k, at := range l.events {
		if !at.Before(from) && at.Before(to) {
			items = append(items, item{k, at})
		}
	}
	l.mu.Unlock()
	sort.Slice(items, func(i, j int) bool { return items[i].IdempotencyKey < items[j].IdempotencyKey })
	start := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		_, _ = fmt.Sscan(c, &start)
	}
	page := map[string]any{"items": items[start:min(start+2, len(items))]}
	if start+2 < len(items) {
		page["next_cursor"] = fmt.Sprint(start + 2)
	}
	_ = json.NewEncoder(w).Encode(page)
}

func opsAPI(t *testing.T, url string) reconcile.OpsAPI {
	t.Helper()
	allow, err := egress.ParseAllowlist("127.0.0.1/32") // the stand-in's address
	require.NoError(t, err)
	c, err := logisticsclient.New(logisticsclient.Config{BaseURL: url, Token: "ops-token",
		Guard: egress.New(egress.Config{Allow: allow})})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return reconcile.OpsAPI{Client: c}
}

// OpsAPI walks every page of the window and reports each one to its Progress.
func TestOpsAPIReadsEveryPageReportingEach(t *testing.T) {
	t.Parallel()
	logi := &logistics{events: map[string]time.Time{}}
	now := time.Now()
	for i := range 5 {
		logi.events[fmt.Sprintf("k-%d", i)] = now.Add(-time.Duration(i) * time.Minute)
	}
	srv := httptest.NewServer(logi)
	t.Cleanup(srv.Close)
	api := opsAPI(t, srv.URL)
	var heard []int
	api.Progress = func(read int) { heard = append(heard, read) }
	got, err := api.Processed(context.Background(), now.Add(-time.Hour), now.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, got, 5)
	require.Equal(t, []int{2, 4, 5}, heard, "two to a page")
}

type notes struct {
	mu     sync.Mutex
	alerts []pager.Alert
}

func (n *notes) Notify(a pager.Alert) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.alerts = append(n.alerts, a)
}

type bundle struct {
	db    *bun.DB
	logi  *logistics
	notes *notes
	rec   *reconcile.Reconciler
}

func setup(t *testing.T) *bundle {
	t.Helper()
	db := financetest.NewDB(t)
	b := &bundle{db: db, logi: &logistics{events: map[string]time.Time{}}, notes: &notes{}}
	srv := httptest.NewServer(b.logi)
	t.Cleanup(srv.Close)
	b.rec = reconcile.New(db, opsAPI(t, srv.URL), b.notes, reconcile.Config{}, nil)
	return b
}

// event writes an outbox row with key in status, delivered (and received by logistics
// unless lost) ago.
func (b *bundle) event(t *testing.T, key, status string, ago time.Duration, received bool) {
	t.Helper()
	_, err := b.db.NewRaw(`INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination,
			aggregate_key, aggregate_seq, delivery_status, created_at, delivered_at, next_attempt_at)
		VALUES (?, 'invoice.paid', '{}', ?, 'http://logistics', ?, 1, ?, now() - make_interval(secs => ?),
			CASE WHEN ? = 'delivered' THEN now() - make_interval(secs => ?) END, now() - make_interval(secs => ?))`,
		uuid.New(), key, "inv-"+key, status, ago.Seconds()+1, status, ago.Seconds(), ago.Seconds()).Exec(context.Background())
	require.NoError(t, err)
	if received {
		b.logi.events[key] = time.Now().Add(-ago - 500*time.Millisecond)
	}
}

// lastHour has rec reconcile the hour up to now.
func lastHour(rec *reconcile.Reconciler) (reconcile.Report, error) {
	now := time.Now()
	return rec.Reconcile(context.Background(), now.Add(-time.Hour), now)
}

// stored is the newest report stored in db; there must be one.
func stored(t *testing.T, db bun.IDB) reconcile.Report {
	t.Helper()
	r, ok, err := reconcile.Latest(context.Background(), db)
	require.NoError(t, err)
	require.True(t, ok, "a report is stored")
	return r
}

func keys(ds []reconcile.Discrepancy) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.IdempotencyKey)
	}
	sort.Strings(out)
	return out
}

// A clean window reports nothing, and its report is what Latest reads.
func TestCleanWindowHasNoDiscrepancies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 5 {
		b.event(t, fmt.Sprintf("k-%d", i), "delivered", time.Duration(i)*time.Minute, true)
	}
	b.event(t, "in-flight", "pending", 0, true) // logistics committed, finance not yet
	b.event(t, "old", "delivered", 3*time.Hour, true)
	rep, err := lastHour(b.rec)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Equal(t, 5, rep.Delivered)
	require.Equal(t, 6, rep.Processed)
	require.Empty(t, b.notes.alerts)

	latest := stored(t, b.db)
	require.Equal(t, rep.ID, latest.ID)
	require.Equal(t, 5, latest.Delivered)
	require.Empty(t, latest.Missing)
}

// Each kind of discrepancy is reported by key, counted, and paged.
func TestDiscrepanciesAreReportedByKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.event(t, "fine", "delivered", time.Minute, true)
	b.event(t, "lost", "delivered", 2*time.Minute, false)
	b.event(t, "stuck", "pending", 20*time.Minute, false)
	b.logi.events["stranger"] = time.Now().Add(-10 * time.Minute)
	rep, err := lastHour(b.rec)
	require.NoError(t, err)
	require.Equal(t, []string{"lost"}, keys(rep.Missing))
	require.Equal(t, []string{"stranger"}, keys(rep.Unknown))
	require.Equal(t, []string{"stuck"}, keys(rep.Overdue))
	require.Equal(t, 3, rep.Discrepancies())
	require.Equal(t, "inv-lost", rep.Missing[0].InvoiceID)

	kinds := []string{}
	for _, a := range b.notes.alerts {
		kinds = append(kinds, a.Kind)
	}
	require.ElementsMatch(t, []string{"reconcile_missing", "reconcile_unknown", "reconcile_overdue"}, kinds)

	latest := stored(t, b.db)
	require.Equal(t, []string{"lost"}, keys(latest.Missing))
	require.Equal(t, 1, latest.UnknownCount)
}

// An event an operator skipped is resolved: logistics never got it, and that is no
// discrepancy. It is counted as skipped in the window it was skipped in, and stored.
func TestSkippedEventIsResolvedNotMissing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.event(t, "fine", "delivered", time.Minute, true)
	b.event(t, "given-up", "failed", 5*time.Minute, false)
	b.event(t, "given-up-long-ago", "failed", 5*time.Minute, false)
	_, err := b.db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'skipped', skipped_at = now() - interval '2 minutes'
		WHERE idempotency_key = 'given-up'`).Exec(context.Background())
	require.NoError(t, err)
	_, err = b.db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'skipped', skipped_at = now() - interval '3 hours'
		WHERE idempotency_key = 'given-up-long-ago'`).Exec(context.Background())
	require.NoError(t, err)

	rep, err := lastHour(b.rec)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Equal(t, 1, rep.Skipped, "skipped in the window")
	require.Equal(t, 1, rep.Delivered)
	require.Empty(t, b.notes.alerts)
	latest := stored(t, b.db)
	require.Equal(t, 1, latest.Skipped)
}

// An unreachable logistics is a failed run: stored with its error, and paged.
func TestFailedRunIsStoredAndPaged(t *testing.T) {
	t.Parallel()
	db := financetest.NewDB(t)
	n := &notes{}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	rec := reconcile.New(db, opsAPI(t, srv.URL), n, reconcile.Config{}, nil)
	_, err := lastHour(rec)
	require.Error(t, err)
	latest := stored(t, db)
	require.NotEmpty(t, latest.Error)
	require.Len(t, n.alerts, 1)
	require.Equal(t, "reconcile_failed", n.alerts[0].Kind)
}

// A scheduled run whose lock is lost while it waits for logistics does no more work:
// its next statement fails on the lost connection, so it stores and pages nothing.
// The next scheduled run takes the lock and stores its report.
func TestScheduledRunStopsWhenItsLockIsLost(t *testing.T) {
	t.Parallel()
	db := financetest.NewDB(t)
	logi := &logistics{events: map[string]time.Time{}}
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			if err := terminateLockHolder(r.Context(), db); err != nil {
				t.Errorf("terminate the lock holder: %v", err)
			}
		})
		logi.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	n := &notes{}
	rec := reconcile.New(db, opsAPI(t, srv.URL), n, reconcile.Config{}, nil)

	rec.Scheduled(context.Background())
	_, ok, err := reconcile.Latest(context.Background(), db)
	require.NoError(t, err)
	require.False(t, ok, "the run stored nothing after its lock was lost")
	require.Empty(t, n.alerts)

	rec.Scheduled(context.Background())
	latest, ok, err := reconcile.Latest(context.Background(), db)
	require.NoError(t, err)
	require.True(t, ok, "the next run took the lock")
	require.Empty(t, latest.Error)
}

// terminateLockHolder ends the backend that holds the one advisory lock in db's
// database and waits until it has exited.
func terminateLockHolder(ctx context.Context, db *bun.DB) error {
	var terminated []bool
	err := db.NewRaw(`SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(ctx, &terminated)
	if err == nil && (len(terminated) != 1 || !terminated[0]) {
		err = fmt.Errorf("terminated %v, want one backend", terminated)
	}
	return err
}

func TestLatestBeforeAnyRun(t *testing.T) {
	t.Parallel()
	db := financetest.NewDB(t)
	_, ok, err := reconcile.Latest(context.Background(), db)
	require.NoError(t, err)
	require.False(t, ok)
}
