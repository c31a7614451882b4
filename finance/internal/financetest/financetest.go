// Package financetest builds finance's domain over a fresh database, wired as
// cmd/finance wires it, and calls finance's HTTP APIs, for the tests of finance's
// packages. Only tests import it.
package financetest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/finance/internal/invoice"
	"handoff/finance/internal/ops"
	"handoff/migrations"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
)

// Destination is logistics' webhook URL, the one the invoices' events are written for.
const Destination = "http://127.0.0.1:8082/webhooks/finance"

// NewDB gives t a database of its own, cloned from one with finance's migrations
// applied.
func NewDB(t testing.TB) *bun.DB {
	t.Helper()
	db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
	return db
}

// Domain is finance's invoices and their outbox over one database.
type Domain struct {
	Ctx      context.Context
	DB       *bun.DB
	Invoices *invoice.Service // writes its events for Destination
	Outbox   *outbox.Store
}

// New gives t a fresh database and the invoice service and outbox store over it.
func New(t testing.TB) *Domain {
	t.Helper()
	db := NewDB(t)
	invoices, err := invoice.NewService(db, invoice.Config{Destination: Destination})
	require.NoError(t, err)
	store, err := outbox.NewStore(invoice.OutboxTable)
	require.NoError(t, err)
	return &Domain{Ctx: context.Background(), DB: db, Invoices: invoices, Outbox: store}
}

// Ops builds the operators' service over d: cfg's database, outbox and invoices are
// d's, and its circuits, when cfg names none, a breaker on finance's table.
func (d *Domain) Ops(t testing.TB, cfg ops.Config) *ops.Service {
	t.Helper()
	if cfg.Circuits == nil {
		cfg.Circuits = NewBreaker(t, breaker.Config{})
	}
	cfg.DB, cfg.Outbox, cfg.Invoices = d.DB, d.Outbox, d.Invoices
	svc, err := ops.New(cfg)
	require.NoError(t, err)
	return svc
}

// NewBreaker is a circuit breaker of cfg on finance's table.
func NewBreaker(t testing.TB, cfg breaker.Config) *breaker.Breaker {
	t.Helper()
	cfg.Table = "finance_breakers"
	br, err := breaker.New(cfg)
	require.NoError(t, err)
	return br
}

// Echo is an HTTP server as finance's APIs are served from, with its log discarded.
func Echo() *echo.Echo {
	return httpserver.New(slog.New(slog.DiscardHandler))
}
