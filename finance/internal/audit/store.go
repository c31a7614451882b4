package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Tables of the audit log.
const (
	actionsTable = "finance_operator_actions"
	eventsTable  = "finance_operator_action_events"
)

// Store holds the SQL of the audit log.
type Store struct{}

// row is a row of finance_operator_actions.
type row struct {
	ID          int64           `bun:"id"`
	At          time.Time       `bun:"at"`
	Actor       string          `bun:"actor"`
	Action      string          `bun:"action"`
	Reason      string          `bun:"reason"`
	Count       int             `bun:"event_count"`
	EventID     *uuid.UUID      `bun:"event_id"`
	InvoiceID   *uuid.UUID      `bun:"invoice_id"`
	Filter      json.RawMessage `bun:"filter,type:jsonb"`
	Destination *string         `bun:"destination"`
	// ForEvent is the event an entry was read for (ForEvents).
	ForEvent uuid.UUID `bun:"for_event"`
}

const columns = `a.id, a.at, a.actor, a.action, a.reason, a.event_count, a.event_id, a.invoice_id,
	a.filter, a.destination`

// Record writes e, and the events it changed, in db's transaction: run it in the
// transaction of the change it records, and the entry commits or rolls back with it.
// It returns e with its ID and time. The database refuses an entry without an actor
// or a reason.
func (Store) Record(ctx context.Context, db bun.IDB, e Entry, changed []Event) (Entry, error) {
	var filter any // NULL unless e has a filter
	if e.Filter != nil {
		b, err := json.Marshal(e.Filter)
		if err != nil {
			return Entry{}, fmt.Errorf("audit: encode filter: %w", err)
		}
		filter = string(b)
	}
	err := db.NewRaw(`INSERT INTO ? (actor, action, reason, event_count, event_id, invoice_id, filter, destination)
		VALUES (?, ?, ?, ?, ?, ?, ?::jsonb, NULLIF(?, '')) RETURNING id, at`,
		bun.Ident(actionsTable), e.Actor, e.Action, e.Reason, e.Count, e.EventID, e.InvoiceID, filter,
		e.Destination).Scan(ctx, &e.ID, &e.At)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	if len(changed) == 0 {
		return e, nil
	}
	events, err := json.Marshal(changed)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: encode events: %w", err)
	}
	_, err = db.NewRaw(`INSERT INTO ? (action_id, event_id, invoice_id)
		SELECT ?, r.event_id, r.invoice_id FROM jsonb_to_recordset(?::jsonb) AS r(event_id uuid, invoice_id uuid)`,
		bun.Ident(eventsTable), e.ID, string(events)).Exec(ctx)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: record %s events: %w", e.Action, err)
	}
	return e, nil
}

// List returns a page of the entries q selects, newest first. A List with the
// previous page's Next as q.After continues where it stopped, however many entries
// arrive meanwhile.
func (Store) List(ctx context.Context, db bun.IDB, q Query) (Page, error) {
	q.Limit = cmp.Or(q.Limit, DefaultLimit)
	var rows []row
	sel := db.NewSelect().TableExpr("? AS a", bun.Ident(actionsTable)).ColumnExpr(columns).
		OrderExpr("a.id DESC").Limit(int64(q.Limit) + 1)
	if q.EventID != nil {
		sel = sel.Where("a.id IN (SELECT action_id FROM ? WHERE event_id = ?)", bun.Ident(eventsTable), *q.EventID)
	}
	if q.InvoiceID != nil {
		sel = sel.Where("(a.invoice_id = ? OR a.id IN (SELECT action_id FROM ? WHERE invoice_id = ?))",
			*q.InvoiceID, bun.Ident(eventsTable), *q.InvoiceID)
	}
	if q.After != nil {
		sel = sel.Where("a.id < ?", q.After.ID)
	}
	if err := sel.Scan(ctx, &rows); err != nil {
		return Page{}, fmt.Errorf("audit: list: %w", err)
	}
	var page Page
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		page.Next = &Cursor{ID: rows[q.Limit-1].ID}
	}
	var err error
	page.Items, err = entries(rows)
	return page, err
}

// ForEvents returns, by event, the entries of the actions that changed each of the
// given events, oldest first.
func (Store) ForEvents(ctx context.Context, db bun.IDB, ids ...uuid.UUID) (map[uuid.UUID][]Entry, error) {
	out := make(map[uuid.UUID][]Entry, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []row
	err := db.NewRaw(`SELECT e.event_id AS for_event, `+columns+`
		FROM ? AS e JOIN ? AS a ON a.id = e.action_id
		WHERE e.event_id IN (?) ORDER BY a.id`,
		bun.Ident(eventsTable), bun.Ident(actionsTable), bun.List(ids)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("audit: entries of events: %w", err)
	}
	for _, r := range rows {
		e, err := r.entry()
		if err != nil {
			return nil, err
		}
		out[r.ForEvent] = append(out[r.ForEvent], e)
	}
	return out, nil
}

func entries(rows []row) ([]Entry, error) {
	out := make([]Entry, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.entry(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r row) entry() (Entry, error) {
	e := Entry{ID: r.ID, At: r.At, Actor: r.Actor, Action: r.Action, Reason: r.Reason, Count: r.Count,
		EventID: r.EventID, InvoiceID: r.InvoiceID}
	if r.Destination != nil {
		e.Destination = *r.Destination
	}
	if len(r.Filter) > 0 {
		e.Filter = &Filter{}
		if err := json.Unmarshal(r.Filter, e.Filter); err != nil {
			return Entry{}, fmt.Errorf("audit: decode filter of entry %d: %w", r.ID, err)
		}
	}
	return e, nil
}
