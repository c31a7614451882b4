package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/user"
	"time"

	"github.com/google/uuid"

	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
)

// errOutboxUsage is the usage of `finance outbox`.
var errOutboxUsage = fmt.Errorf(`want outbox stats | list [--status= --type= --invoice= --from= --to= --limit= --cursor=]`+
	` | show <event-id> | retry <event-id> | retry --status=failed|pending [--type= --invoice= --from= --to= --limit=]`+
	` | trace <invoice>: %w`, errUsage)

// outboxCommand runs `finance outbox …` directly against DATABASE_URL, without the HTTP
// API, printing tables for a person. Replays are logged to stderr with the OS user.
func outboxCommand(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) (err error) {
	if len(args) == 0 {
		return errOutboxUsage
	}
	cmds := map[string]func(outboxCLI, context.Context, []string) error{
		"stats": outboxCLI.stats, "list": outboxCLI.list, "show": outboxCLI.show,
		"retry": outboxCLI.retry, "trace": outboxCLI.trace,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		return errOutboxUsage
	}
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, 4)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	svc, closeOps, err := newOps(db, cfg, logging.New(stderr, "finance", cfg.LogLevel))
	if err != nil {
		return err
	}
	defer closeOps()
	return cmd(outboxCLI{svc: svc, out: stdout}, ctx, args[1:])
}

// outboxCLI is one run of an outbox command.
type outboxCLI struct {
	svc *ops.Service
	out io.Writer
}

func (c outboxCLI) stats(ctx context.Context, args []string) error {
	if len(args) != 0 {
		return errOutboxUsage
	}
	ov, err := c.svc.Overview(ctx)
	if err != nil {
		return err
	}
	printStats(c.out, ov)
	return nil
}

func (c outboxCLI) list(ctx context.Context, args []string) error {
	var ff filterFlags
	fs := ff.flagSet("list")
	cursor := fs.String("cursor", "", "continue after a previous page")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return errOutboxUsage
	}
	f, err := ff.filter(ctx, c.svc)
	if err != nil {
		return err
	}
	if *cursor != "" {
		cur, err := outbox.ParseCursor(*cursor)
		if err != nil {
			return err
		}
		f.After = &cur
	}
	page, err := c.svc.Events(ctx, f)
	if err != nil {
		return err
	}
	printEvents(c.out, page)
	return nil
}

func (c outboxCLI) show(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errOutboxUsage
	}
	id, err := uuid.Parse(args[0])
	if err != nil {
		return fmt.Errorf("invalid event id %q: want a UUID", args[0])
	}
	d, err := c.svc.Event(ctx, id)
	if err != nil {
		return err
	}
	printEvent(c.out, d)
	return nil
}

// retry replays one event by id, or every event matching the flags (--status is then
// required, so a bare `retry` never replays everything by accident).
func (c outboxCLI) retry(ctx context.Context, args []string) error {
	if len(args) == 1 && len(args[0]) > 0 && args[0][0] != '-' {
		return c.retryOne(ctx, args[0])
	}
	var ff filterFlags
	fs := ff.flagSet("retry")
	if fs.Parse(args) != nil || fs.NArg() != 0 || ff.status == "" {
		return errOutboxUsage
	}
	f, err := ff.filter(ctx, c.svc)
	if err != nil {
		return err
	}
	res, err := c.svc.RetryMatching(ctx, f, cliPrincipal())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "replayed %d events: pending, due now, budget reset\n", res.Count)
	if err == nil && res.More {
		_, err = fmt.Fprintf(c.out, "more events match (limit %d): run the command again\n",
			cmp.Or(f.Limit, outbox.DefaultRetryLimit))
	}
	return err
}

func (c outboxCLI) retryOne(ctx context.Context, arg string) error {
	id, err := uuid.Parse(arg)
	if err != nil {
		return fmt.Errorf("invalid event id %q: want a UUID", arg)
	}
	ev, err := c.svc.Retry(ctx, id, cliPrincipal())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "replayed %s (%s of invoice %s): pending, due now, budget reset; %d requests so far\n",
		ev.ID, ev.EventType, ev.AggregateKey, ev.Requests)
	return err
}

func (c outboxCLI) trace(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errOutboxUsage
	}
	t, err := c.svc.Trace(ctx, args[0])
	if err != nil {
		return err
	}
	printTrace(c.out, t)
	return nil
}

// filterFlags are the event filters of list and retry.
type filterFlags struct {
	status, typ, invoice, from, to string
	limit                          int
}

func (ff *filterFlags) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&ff.status, "status", "", "pending, delivered or failed")
	fs.StringVar(&ff.typ, "type", "", "event type, e.g. invoice.paid")
	fs.StringVar(&ff.invoice, "invoice", "", "invoice id or number (INV-004711 or 4711)")
	fs.StringVar(&ff.from, "from", "", "created at or after (RFC 3339)")
	fs.StringVar(&ff.to, "to", "", "created before (RFC 3339)")
	fs.IntVar(&ff.limit, "limit", 0, "page size, or most events replayed")
	return fs
}

func (ff filterFlags) filter(ctx context.Context, svc *ops.Service) (outbox.Filter, error) {
	f := outbox.Filter{Status: ff.status, Type: ff.typ, Limit: ff.limit}
	for _, t := range []struct {
		name, value string
		dst         *time.Time
	}{{"--from", ff.from, &f.CreatedFrom}, {"--to", ff.to, &f.CreatedTo}} {
		if t.value == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.value)
		if err != nil {
			return outbox.Filter{}, fmt.Errorf("invalid %s %q: want an RFC 3339 time such as 2030-01-02T03:04:05Z", t.name, t.value)
		}
		*t.dst = v
	}
	if ff.invoice != "" {
		key, err := svc.AggregateKey(ctx, ff.invoice)
		if err != nil {
			return outbox.Filter{}, err
		}
		f.AggregateKey = key
	}
	return f, nil
}

// cliPrincipal names who replays from the command line, for the audit log.
func cliPrincipal() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
