// Package logisticstest builds logistics' shipments over a fresh database, serves
// logistics' HTTP APIs and calls them, for the tests of logistics' packages. Only
// tests import it.
package logisticstest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/migrations"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"

	"handoff/logistics/internal/shipment"
)

// The tokens Tokens accepts: the warehouse's and the operators'.
const (
	WarehouseToken = "warehouse-token-0123456789"
	OpsToken       = "ops-token-0123456789abcdef"
)

// NewDB gives t a database of its own, cloned from one with logistics' migrations
// applied.
func NewDB(t testing.TB) *bun.DB {
	t.Helper()
	db, _ := pgtest.NewDB(t, "logistics", migrations.Logistics())
	return db
}

// Tokens are WarehouseToken in the warehouse role and OpsToken in the ops role.
func Tokens(t testing.TB) auth.Tokens {
	t.Helper()
	tokens, err := auth.ParseTokens("warehouse:"+WarehouseToken+",ops:"+OpsToken, "warehouse", "ops")
	require.NoError(t, err)
	return tokens
}

// Serve serves the routes register adds, on an HTTP server as logistics' APIs are
// served from with its log discarded, until t ends, and returns its base URL.
func Serve(t testing.TB, register func(*echo.Echo)) string {
	t.Helper()
	e := httpserver.New(slog.New(slog.DiscardHandler))
	register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Apply applies ev to svc in a transaction of its own, as the webhook would.
func Apply(db *bun.DB, svc *shipment.Service, ev shipment.Event) (shipment.Result, error) {
	var res shipment.Result
	err := pgdb.RunInPipe(context.Background(), db, func(ctx context.Context, p *pgdb.Pipe) error {
		var err error
		res, err = svc.ApplyEvent(ctx, p, ev)
		return err
	})
	return res, err
}

// Response is an HTTP answer, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req on a connection of its own and reads the answer.
func Do(t testing.TB, req *http.Request) Response {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// Call sends method to url with token as its bearer token (none when token is empty)
// and body as JSON (none when body is empty), as Do does, and reads the answer.
func Call(t testing.TB, method, url, token, body string) Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return Do(t, req)
}
