package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"

	"handoff/e2e/harness"
)

func decode(r harness.Response, v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("decode %d %s: %w", r.Status, r.Body, err)
	}
	return nil
}

func queryRow(ctx context.Context, url, sql string, args []any, dest ...any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql, args...).Scan(dest...)
}

// report prints each invoice beside its shipment, read from both databases.
func report(ctx context.Context, out io.Writer, svc *services) error {
	conn, err := pgx.Connect(ctx, svc.financeDB)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id::text, number, status FROM invoices ORDER BY seq`)
	if err != nil {
		return err
	}
	type inv struct{ id, number, status string }
	invs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inv, error) {
		var i inv
		return i, r.Scan(&i.id, &i.number, &i.status)
	})
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "   invoice\tstatus\tshipment\tshipments for it")
	for _, i := range invs {
		var state string
		var count int
		err := queryRow(ctx, svc.logisticsDB, `SELECT coalesce(max(state), '—'), count(*) FROM shipments WHERE invoice_id = $1`,
			[]any{i.id}, &state, &count)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %s\t%s\t%s\t%d\n", i.number, i.status, state, count)
	}
	return w.Flush()
}

// outbox prints the outbox rows with their attempts and last error.
func outbox(ctx context.Context, out io.Writer, financeDB string) error {
	conn, err := pgx.Connect(ctx, financeDB)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT idempotency_key, delivery_status, request_count, coalesce(last_error, '')
		FROM finance_outbox ORDER BY created_at`)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "   outbox key\tstatus\trequests\tlast error")
	for rows.Next() {
		var key, status, lastErr string
		var requests int
		if err := rows.Scan(&key, &status, &requests, &lastErr); err != nil {
			return err
		}
		if len(lastErr) > 60 {
			lastErr = lastErr[:60] + "…"
		}
		fmt.Fprintf(w, "   %s\t%s\t%d\t%s\n", key, status, requests, lastErr)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}
