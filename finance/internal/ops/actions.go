package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/finance/internal/audit"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
)

// MaxReasonLength bounds the reason of an action, in characters.
const MaxReasonLength = 1000

// maxDestinationLength bounds a destination named by an operator, in bytes.
const maxDestinationLength = 2048

// Action is who asks for a change and why. Every change an operator makes through the
// service is recorded with it in the audit log, in the change's own transaction.
type Action struct {
	// Actor names who asks: the principal of an ops token, or cli:<user>.
	Actor string
	// Reason says why; required, at most MaxReasonLength characters once trimmed.
	Reason string
}

// ValidationError names the field of an operator's request that is invalid; nothing
// was changed or recorded.
type ValidationError struct {
	Field  string
	Detail string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("ops: invalid %s: %s", e.Field, e.Detail)
}

// Refusals of Pause and Resume; nothing was changed or recorded.
var (
	ErrPaused    = errors.New("ops: the destination is paused already")
	ErrNotPaused = errors.New("ops: the destination is not paused")
)

// check trims a's reason and refuses an action without an actor or a reason.
func (a Action) check() (Action, error) {
	a.Reason = strings.TrimSpace(a.Reason)
	switch {
	case a.Actor == "":
		return a, errors.New("ops: an action needs an actor")
	case a.Reason == "":
		return a, &ValidationError{Field: "reason", Detail: "is required: say why"}
	case !storable(a.Reason):
		return a, &ValidationError{Field: "reason", Detail: "must be valid UTF-8 without NUL"}
	case utf8.RuneCountInString(a.Reason) > MaxReasonLength:
		return a, &ValidationError{Field: "reason", Detail: fmt.Sprintf("must be at most %d characters", MaxReasonLength)}
	}
	return a, nil
}

// change is the part of an action that changes the outbox or a circuit, in tx; it says
// what it did as an audit entry (without actor and reason) and the events it changed.
type change func(ctx context.Context, tx bun.IDB) (audit.Entry, []audit.Event, error)

// act runs do in one transaction with the audit entry of what it did, made by act
// (checked by the caller), so the entry commits exactly when the change does, and
// logs the action once committed.
func (s *Service) act(ctx context.Context, act Action, do change) (audit.Entry, error) {
	var entry audit.Entry
	err := pgdb.RunInTx(ctx, s.cfg.DB, nil, func(ctx context.Context, tx bun.Tx) error {
		e, changed, err := do(ctx, tx)
		if err != nil {
			return err
		}
		e.Actor, e.Reason = act.Actor, act.Reason
		entry, err = s.audit.Record(ctx, tx, e, changed)
		return err
	})
	if err != nil {
		return audit.Entry{}, err
	}
	attrs := []any{"action", entry.Action, "by", entry.Actor, "reason", entry.Reason, "events", entry.Count}
	if entry.EventID != nil {
		attrs = append(attrs, "event_id", *entry.EventID)
	}
	if entry.Destination != "" {
		attrs = append(attrs, "destination", entry.Destination)
	}
	s.log.InfoContext(ctx, "operator action", attrs...)
	return entry, nil
}

// RetryEvent replays one event (outbox.Store.Retry) and records it.
func (s *Service) RetryEvent(ctx context.Context, id uuid.UUID, act Action) (outbox.StoredEvent, error) {
	return s.onEvent(ctx, id, act, audit.Retry, s.cfg.Outbox.Retry)
}

// Skip gives up one dead letter (outbox.Store.Skip), so its invoice's later events go
// on, and records it.
func (s *Service) Skip(ctx context.Context, id uuid.UUID, act Action) (outbox.StoredEvent, error) {
	return s.onEvent(ctx, id, act, audit.Skip, s.cfg.Outbox.Skip)
}

// Resend sends one delivered event again under its key (outbox.Store.Resend), so a
// receiver that still has it answers duplicate, and records it.
func (s *Service) Resend(ctx context.Context, id uuid.UUID, act Action) (outbox.StoredEvent, error) {
	return s.onEvent(ctx, id, act, audit.Resend, s.cfg.Outbox.Resend)
}

// onEvent runs an action on one event and records it with the event and its invoice.
func (s *Service) onEvent(ctx context.Context, id uuid.UUID, act Action, action string,
	do func(context.Context, bun.IDB, uuid.UUID) (outbox.StoredEvent, error)) (outbox.StoredEvent, error) {
	act, err := act.check()
	if err != nil {
		return outbox.StoredEvent{}, err
	}
	var ev outbox.StoredEvent
	_, err = s.act(ctx, act, func(ctx context.Context, tx bun.IDB) (audit.Entry, []audit.Event, error) {
		var err error
		if ev, err = do(ctx, tx, id); err != nil {
			return audit.Entry{}, nil, err
		}
		changed, err := events([]outbox.EventRef{{ID: ev.ID, AggregateKey: ev.AggregateKey}})
		if err != nil {
			return audit.Entry{}, nil, err
		}
		return audit.Entry{Action: action, Count: 1, EventID: &ev.ID, InvoiceID: &changed[0].InvoiceID}, changed, nil
	})
	return ev, err
}

// events names the changed events with their invoices (an event's aggregate key is
// its invoice's id).
func events(refs []outbox.EventRef) ([]audit.Event, error) {
	out := make([]audit.Event, len(refs))
	for i, r := range refs {
		inv, err := uuid.Parse(r.AggregateKey)
		if err != nil {
			return nil, fmt.Errorf("ops: event %s: aggregate key %q is no invoice id", r.ID, r.AggregateKey)
		}
		out[i] = audit.Event{ID: r.ID, InvoiceID: inv}
	}
	return out, nil
}

// storable reports whether PostgreSQL takes s as text: valid UTF-8 without NUL.
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
