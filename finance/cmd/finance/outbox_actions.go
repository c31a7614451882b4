package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/google/uuid"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/outbox"
)

// The outbox commands that act: each takes --reason and is recorded in the audit log
// with cliPrincipal as the actor.

// retry replays one event by id, or every event matching the flags (--status is then
// required, so a bare `retry` never replays everything by accident).
func (c outboxCLI) retry(ctx context.Context, args []string) error {
	return c.onEvents(ctx, args, "retry", (*ops.Service).RetryEvent, (*ops.Service).RetryMatching,
		func(ev outbox.StoredEvent) string {
			return fmt.Sprintf("replayed %s (%s of invoice %s): pending, due now, budget reset; %d requests so far",
				ev.ID, ev.EventType, ev.AggregateKey, ev.Requests)
		}, "replay", "replayed %d events: pending, due now, budget reset")
}

// skip gives up one dead letter by id, or every dead letter matching the flags
// (--status=failed is then required, as for retry).
func (c outboxCLI) skip(ctx context.Context, args []string) error {
	return c.onEvents(ctx, args, "skip", (*ops.Service).Skip, (*ops.Service).SkipMatching,
		func(ev outbox.StoredEvent) string {
			return fmt.Sprintf("skipped %s (%s of invoice %s): never sent again; the invoice's later events go on",
				ev.ID, ev.EventType, ev.AggregateKey)
		}, "skip", "skipped %d dead letters: never sent again; their invoices' later events go on")
}

type (
	oneAction  func(*ops.Service, context.Context, uuid.UUID, ops.Action) (outbox.StoredEvent, error)
	bulkAction func(*ops.Service, context.Context, ops.Matching, ops.Action) (outbox.BulkResult, error)
)

// onEvents runs an action on the event named by the one argument, or by filter on the
// events the flags select: done describes one event changed, verb and doneN the
// changes by filter.
func (c outboxCLI) onEvents(ctx context.Context, args []string, name string, one oneAction, many bulkAction,
	done func(outbox.StoredEvent) string, verb, doneN string) error {
	var ff filterFlags
	fs := ff.flagSet(name)
	reason := fs.String("reason", "", "why (required)")
	dryRun := fs.Bool("dry-run", false, "only count the events the action would change")
	pos, ok := parse(fs, args)
	switch {
	case !ok || len(pos) > 1:
		return errOutboxUsage
	case len(pos) == 1:
		if ff != (filterFlags{}) || *dryRun {
			return errOutboxUsage
		}
		id, err := eventArg(pos[0])
		if err != nil {
			return err
		}
		ev, err := one(c.svc, ctx, id, ops.Action{Actor: cliPrincipal(), Reason: *reason})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(c.out, done(ev))
		return err
	case ff.status == "":
		return errOutboxUsage
	}
	f, err := ff.filter(ctx, c.svc)
	if err != nil {
		return err
	}
	res, err := many(c.svc, ctx, ops.Matching{Filter: f, DryRun: *dryRun}, ops.Action{Actor: cliPrincipal(), Reason: *reason})
	if err != nil {
		return err
	}
	if *dryRun {
		_, err = fmt.Fprintf(c.out, "dry run: would %s %d events; nothing changed\n", verb, res.Count)
	} else {
		_, err = fmt.Fprintf(c.out, doneN+"\n", res.Count)
	}
	if err == nil && res.More {
		_, err = fmt.Fprintf(c.out, "more events match (limit %d): run the command again\n",
			cmp.Or(f.Limit, outbox.DefaultRetryLimit))
	}
	return err
}

// resend sends one delivered event again under its key.
func (c outboxCLI) resend(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("resend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	reason := fs.String("reason", "", "why (required)")
	pos, ok := parse(fs, args)
	if !ok || len(pos) != 1 {
		return errOutboxUsage
	}
	id, err := eventArg(pos[0])
	if err != nil {
		return err
	}
	ev, err := c.svc.Resend(ctx, id, ops.Action{Actor: cliPrincipal(), Reason: *reason})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "resent %s (%s of invoice %s) under key %s: pending, due now; %d requests so far\n",
		ev.ID, ev.EventType, ev.AggregateKey, clean(ev.IdempotencyKey, 0), ev.Requests)
	return err
}

// retarget moves the undelivered events of an old destination to LOGISTICS_WEBHOOK_URL.
func (c outboxCLI) retarget(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("retarget", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", "", "the old destination")
	reason := fs.String("reason", "", "why (required)")
	if pos, ok := parse(fs, args); !ok || len(pos) != 0 || *from == "" {
		return errOutboxUsage
	}
	n, err := c.svc.Retarget(ctx, *from, ops.Action{Actor: cliPrincipal(), Reason: *reason})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "moved %d undelivered events from %s to %s: pending ones are due now, dead letters wait for a retry\n",
		n, clean(*from, 0), clean(c.destination, 0))
	return err
}

// pause stops deliveries to a destination (LOGISTICS_WEBHOOK_URL by default).
func (c outboxCLI) pause(ctx context.Context, args []string) error {
	dest, act, err := c.destinationFlags("pause", args)
	if err != nil {
		return err
	}
	if err := c.svc.Pause(ctx, dest, act); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "paused %s: no replica sends to it until `finance outbox resume`\n", clean(dest, 0))
	return err
}

// resume lets deliveries to a destination (LOGISTICS_WEBHOOK_URL by default) go again.
func (c outboxCLI) resume(ctx context.Context, args []string) error {
	dest, act, err := c.destinationFlags("resume", args)
	if err != nil {
		return err
	}
	n, err := c.svc.Resume(ctx, dest, act)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "resumed %s: %d deferred events due now\n", clean(dest, 0), n)
	return err
}

func (c outboxCLI) destinationFlags(name string, args []string) (string, ops.Action, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dest := fs.String("destination", c.destination, "the destination (default LOGISTICS_WEBHOOK_URL)")
	reason := fs.String("reason", "", "why (required)")
	if pos, ok := parse(fs, args); !ok || len(pos) != 0 {
		return "", ops.Action{}, errOutboxUsage
	}
	return *dest, ops.Action{Actor: cliPrincipal(), Reason: *reason}, nil
}

// audit lists the audit log, newest first, of everything or of one event or invoice.
func (c outboxCLI) audit(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	event := fs.String("event", "", "the actions that changed this event")
	inv := fs.String("invoice", "", "the actions on this invoice (INV-004711, 4711 or an id)")
	limit := fs.Int("limit", 0, "page size")
	cursor := fs.String("cursor", "", "continue after a previous page")
	if pos, ok := parse(fs, args); !ok || len(pos) != 0 {
		return errOutboxUsage
	}
	q := audit.Query{Limit: *limit}
	if *event != "" {
		id, err := eventArg(*event)
		if err != nil {
			return err
		}
		q.EventID = &id
	}
	if *inv != "" {
		id, err := c.svc.InvoiceID(ctx, *inv)
		if err != nil {
			return err
		}
		q.InvoiceID = &id
	}
	if *cursor != "" {
		cur, err := audit.ParseCursor(*cursor)
		if err != nil {
			return err
		}
		q.After = &cur
	}
	page, err := c.svc.Audit(ctx, q)
	if err != nil {
		return err
	}
	printAuditPage(c.out, page)
	return nil
}
