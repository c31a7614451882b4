package retention

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// ArchiveSpec describes delivered events of an outbox (package outbox) to move into
// its archive. The tables follow one naming rule: the outbox <O> with its attempt log
// <O>_attempts moves into <O>_archive and <O>_attempts_archive, whose shape
// ArchiveSchema returns.
type ArchiveSpec struct {
	// Outbox is the outbox table, e.g. "orders_outbox".
	Outbox string
	// OlderThan is the window: events delivered before now() - OlderThan move.
	OlderThan time.Duration
	// Batch is how many events one statement moves (default DefaultBatch).
	Batch int
}

// ArchiveOutbox returns a task that moves delivered events older than the window,
// with their attempts, into the archive tables, in batches: each batch is one
// statement that selects delivered rows FOR UPDATE SKIP LOCKED, copies them and their
// attempts, and deletes them. A row that is not delivered is never touched.
//
// The columns copied are those the source and the archive share, read from the
// catalogue on every run, so a column added to the outbox later does not break the
// task (it is archived once the archive gains it too).
func ArchiveOutbox(spec ArchiveSpec) (Task, error) {
	spec.Batch = cmp.Or(spec.Batch, DefaultBatch)
	if err := checkIdents(spec.Outbox); err != nil {
		return Task{}, err
	}
	if spec.OlderThan <= 0 || spec.Batch < 1 {
		return Task{}, fmt.Errorf("retention: archive %s needs a positive OlderThan and Batch", spec.Outbox)
	}
	a := archiver{spec: spec}
	about := fmt.Sprintf("move events of %s delivered more than %s ago, with their attempts, to %s_archive",
		spec.Outbox, window(spec.OlderThan), spec.Outbox)
	return Task{Name: spec.Outbox, About: about, Run: a.run}, nil
}

type archiver struct {
	spec ArchiveSpec
}

func (a archiver) run(ctx context.Context, db bun.IDB) (int64, error) {
	o := a.spec.Outbox
	events, err := sharedColumns(ctx, db, o, o+"_archive")
	if err != nil {
		return 0, err
	}
	attempts, err := sharedColumns(ctx, db, o+"_attempts", o+"_attempts_archive")
	if err != nil {
		return 0, err
	}
	return batches(ctx, o, a.spec.Batch, func(ctx context.Context) (int64, error) {
		return a.step(ctx, db, events, attempts)
	})
}

// step moves one batch. The copies and the delete run in one statement, on one
// snapshot: the attempts copied are exactly those the delete then cascades away.
func (a archiver) step(ctx context.Context, db bun.IDB, events, attempts bun.Safe) (int64, error) {
	o := a.spec.Outbox
	var moved int64
	err := db.NewRaw(`
		WITH moved AS (
			SELECT id FROM ? WHERE delivery_status = 'delivered'
			  AND delivered_at < now() - make_interval(secs => ?)
			ORDER BY delivered_at LIMIT ? FOR UPDATE SKIP LOCKED
		), events AS (
			INSERT INTO ? (?) SELECT ? FROM ? WHERE id IN (SELECT id FROM moved)
			ON CONFLICT (id) DO NOTHING
		), attempts AS (
			INSERT INTO ? (?) SELECT ? FROM ? WHERE outbox_id IN (SELECT id FROM moved)
			ON CONFLICT (id) DO NOTHING
		), gone AS (
			DELETE FROM ? WHERE id IN (SELECT id FROM moved) RETURNING id
		)
		SELECT count(*) FROM gone`,
		bun.Ident(o), a.spec.OlderThan.Seconds(), a.spec.Batch,
		bun.Ident(o+"_archive"), events, events, bun.Ident(o),
		bun.Ident(o+"_attempts_archive"), attempts, attempts, bun.Ident(o+"_attempts"),
		bun.Ident(o)).Scan(ctx, &moved)
	if err != nil {
		return 0, fmt.Errorf("archive %s: %w", o, err)
	}
	return moved, nil
}

// sharedColumns lists the columns of from that to has too, quoted, in from's order.
func sharedColumns(ctx context.Context, db bun.IDB, from, to string) (bun.Safe, error) {
	var cols []string
	err := db.NewRaw(`
		SELECT f.column_name FROM information_schema.columns f
		JOIN information_schema.columns t
		  ON t.table_schema = f.table_schema AND t.table_name = ? AND t.column_name = f.column_name
		WHERE f.table_schema = current_schema() AND f.table_name = ?
		ORDER BY f.ordinal_position`, to, from).Scan(ctx, &cols)
	if err != nil {
		return "", fmt.Errorf("archive %s: columns: %w", from, err)
	}
	if len(cols) == 0 {
		return "", fmt.Errorf("archive %s: no columns shared with %s (does it exist?)", from, to)
	}
	for i, c := range cols {
		if err := checkIdents(c); err != nil {
			return "", err
		}
		cols[i] = `"` + c + `"`
	}
	return bun.Safe(strings.Join(cols, ", ")), nil
}
