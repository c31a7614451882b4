package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/user"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/insight"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
)

// The `finance outbox …` commands run directly against DATABASE_URL, without the HTTP
// API, and print tables for a person or, with --json, one JSON document. Every action
// is recorded in the audit log with the OS user (cliPrincipal) and the --reason given.

// outboxCommands declares the outbox commands that read; the actions are in
// outboxActions.
func (e env) outboxCommands() []cli.Command {
	cmds := []cli.Command{{
		Name: "outbox stats", Summary: "counts by status, oldest pending age, circuits, pauses",
		Help: "Count the events by status: pending (not yet delivered; due now: their next attempt\n" +
			"time has come and no dispatcher holds them; in flight: being sent right now; the\n" +
			"oldest pending one's age), failed (dead letters), delivered (still in the outbox,\n" +
			"not yet archived) and skipped (dead letters an operator gave up). Then each\n" +
			"destination's circuit, whether it is paused, and the latest reconciliation.",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			asJSON := jsonFlag(fs)
			return func(ctx context.Context, _ []string) error {
				return e.withOutbox(ctx, func(c outboxCLI) error { return c.stats(ctx, *asJSON) })
			}
		},
	}, {
		Name: "outbox list", Summary: "events, newest first",
		Help: "List events, newest first, a page at a time. ATTEMPTS is counted/sent: the attempts\n" +
			"counted against the budget (a retry resets them) and every request ever sent. A\n" +
			"pending event held back by a failed earlier event of its invoice says \"waiting for\n" +
			"<type> #<sequence> (failed)\": retry or skip that one.",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			var ff filterFlags
			ff.declare(fs, "pending, delivered, failed or skipped", "page size (default 50, at most 500)")
			cursor := fs.String("cursor", "", "continue after a previous page (`cursor` printed by it)")
			asJSON := jsonFlag(fs)
			return func(ctx context.Context, _ []string) error {
				var after *outbox.Cursor
				if *cursor != "" {
					cur, err := outbox.ParseCursor(*cursor)
					if err != nil {
						return cli.BadUsage(err)
					}
					after = &cur
				}
				return e.withOutbox(ctx, func(c outboxCLI) error {
					f, err := ff.filter(ctx, c.svc)
					if err != nil {
						return err
					}
					f.After = after
					return c.list(ctx, f, *asJSON)
				})
			}
		},
	}, {
		Name: "outbox show", Args: "<event-id>", MinArgs: 1, MaxArgs: 1,
		Summary: "one event with every attempt, operator action and its payload",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			asJSON := jsonFlag(fs)
			return func(ctx context.Context, args []string) error {
				id, err := eventArg(args[0])
				if err != nil {
					return err
				}
				return e.withOutbox(ctx, func(c outboxCLI) error { return c.show(ctx, id, *asJSON) })
			}
		},
	}, {
		Name: "outbox trace", Args: "<invoice>", MinArgs: 1, MaxArgs: 1,
		Summary: "an invoice's events, attempts, operator actions and logistics' record",
		Help: "Show the invoice (INV-004711, 4711 or its id): its events with every attempt and\n" +
			"operator action, and what logistics recorded of each (read from LOGISTICS_API_URL\n" +
			"with LOGISTICS_OPS_TOKEN; without them the trace says the record is unavailable).",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			asJSON := jsonFlag(fs)
			return func(ctx context.Context, args []string) error {
				return e.withOutbox(ctx, func(c outboxCLI) error { return c.trace(ctx, args[0], *asJSON) })
			}
		},
	}}
	cmds = append(cmds, e.outboxActions()...)
	return append(cmds, e.auditCommand())
}

// outboxCLI is one run of an outbox command.
type outboxCLI struct {
	svc *ops.Service
	// causes explains a row: the invoice's number, the failed event holding it back.
	causes *insight.Store
	// out gets the result; progress, what a long command is doing.
	out, progress io.Writer
	// destination is LOGISTICS_WEBHOOK_URL: where retarget moves events, and what
	// pause and resume act on unless told otherwise.
	destination string
}

// withOutbox runs f with the ops service on DATABASE_URL. A refusal of what the
// command line said (an invalid filter or reason, a bad cursor) becomes a mistake on
// the command line, so it exits 2 with the command's usage.
func (e env) withOutbox(ctx context.Context, f func(c outboxCLI) error) error {
	cfg, err := e.config("outbox")
	if err != nil {
		return err
	}
	return command.WithDB(ctx, cfg.DatabaseURL, func(db *bun.DB) error {
		svc, closeOps, err := newOps(db, cfg, newGuard(cfg), logging.New(e.stderr, "finance", cfg.LogLevel))
		if err != nil {
			return err
		}
		defer closeOps()
		causes, err := insight.New(db)
		if err != nil {
			return err
		}
		return commandLine(f(outboxCLI{svc: svc, causes: causes, out: e.stdout, progress: e.stderr, destination: cfg.WebhookURL}))
	})
}

// commandLine marks the errors that refuse what the command line said as mistakes on
// it; the others (not found, already delivered, the database) stay as they are.
func commandLine(err error) error {
	var filter *outbox.FilterError
	var invalid *ops.ValidationError
	var invoiceInvalid *invoice.ValidationError
	if errors.As(err, &filter) || errors.As(err, &invalid) || errors.As(err, &invoiceInvalid) ||
		errors.Is(err, audit.ErrBadCursor) {
		return cli.BadUsage(err)
	}
	return err
}

func (c outboxCLI) stats(ctx context.Context, asJSON bool) error {
	ov, err := c.svc.Overview(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.out, newStatsDoc(ov))
	}
	printStats(c.out, ov)
	return nil
}

func (c outboxCLI) list(ctx context.Context, f outbox.Filter, asJSON bool) error {
	page, err := c.svc.Events(ctx, f)
	if err != nil {
		return err
	}
	rows, err := c.causes.Rows(ctx, page.Items)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.out, newListDoc(rows, page.Next))
	}
	printEvents(c.out, rows, page.Next)
	return nil
}

func (c outboxCLI) show(ctx context.Context, id uuid.UUID, asJSON bool) error {
	d, err := c.svc.Event(ctx, id)
	if err != nil {
		return err
	}
	rows, err := c.causes.Rows(ctx, []outbox.StoredEvent{d.StoredEvent})
	if err != nil {
		return err
	}
	actions, err := c.svc.EventActions(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.out, newDetailDoc(rows[0], d, actions))
	}
	printEvent(c.out, rows[0], d, actions)
	return nil
}

func (c outboxCLI) trace(ctx context.Context, ref string, asJSON bool) error {
	t, err := c.svc.Trace(ctx, ref)
	if err != nil {
		return err
	}
	events := make([]outbox.StoredEvent, len(t.Events))
	for i, ev := range t.Events {
		events[i] = ev.StoredEvent
	}
	rows, err := c.causes.Rows(ctx, events)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.out, newTraceDoc(t, rows))
	}
	printTrace(c.out, t, rows)
	return nil
}

func eventArg(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, cli.Usagef("invalid event id %q: want a UUID", s)
	}
	return id, nil
}

// jsonFlag declares --json on a command that reads.
func jsonFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("json", false, "print one JSON document instead of the text")
}

// filterFlags are the event filters of list, and of retry and skip by filter.
type filterFlags struct {
	status, typ, invoice string
	from, to             timeFlag
	limit                int
}

// declare declares the filters on fs; statuses says which --status takes, limit what
// --limit bounds.
func (ff *filterFlags) declare(fs *flag.FlagSet, statuses, limit string) {
	fs.Func("status", "the events' `status`: "+statuses, func(v string) error {
		if !outbox.ValidStatus(v) {
			return errors.New("want pending, delivered, failed or skipped")
		}
		ff.status = v
		return nil
	})
	fs.StringVar(&ff.typ, "type", "", "event `type`, e.g. invoice.paid")
	fs.StringVar(&ff.invoice, "invoice", "", "the `invoice`'s events: INV-004711, 4711 or its id")
	fs.Var(&ff.from, "from", "created at or after this RFC 3339 `time`")
	fs.Var(&ff.to, "to", "created before this RFC 3339 `time`")
	fs.IntVar(&ff.limit, "limit", 0, limit)
}

// set reports whether any filter was given.
func (ff filterFlags) set() bool { return ff != (filterFlags{}) }

func (ff filterFlags) filter(ctx context.Context, svc *ops.Service) (outbox.Filter, error) {
	f := outbox.Filter{Status: ff.status, Type: ff.typ, Limit: ff.limit, CreatedFrom: ff.from.t, CreatedTo: ff.to.t}
	if ff.invoice != "" {
		key, err := svc.AggregateKey(ctx, ff.invoice)
		if err != nil {
			return outbox.Filter{}, err
		}
		f.AggregateKey = key
	}
	return f, nil
}

// timeFlag is a flag holding an RFC 3339 time.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f *timeFlag) Set(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time such as 2030-01-02T03:04:05Z")
	}
	f.t = t
	return nil
}

// cliPrincipal names who acts from the command line, for the audit log.
func cliPrincipal() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
