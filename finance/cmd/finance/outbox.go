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

	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
)

// errOutboxUsage is the usage of `finance outbox`.
var errOutboxUsage = fmt.Errorf(`want outbox stats | list [--status= --type= --invoice= --from= --to= --limit= --cursor=]`+
	` | show <event-id> | retry|skip <event-id> --reason= | retry|skip --status= [--type= --invoice= --from= --to= --limit=]`+
	` --reason= [--dry-run] | resend <event-id> --reason= | retarget --from=<old url> --reason=`+
	` | pause|resume [--destination=] --reason= | audit [--event= --invoice= --limit= --cursor=] | trace <invoice>: %w`, errUsage)

// outboxCommand runs `finance outbox …` directly against DATABASE_URL, without the HTTP
// API, printing tables for a person. Every action is recorded in the audit log with
// the OS user (cliPrincipal) and the --reason given.
func outboxCommand(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) (err error) {
	if len(args) == 0 {
		return errOutboxUsage
	}
	cmds := map[string]func(outboxCLI, context.Context, []string) error{
		"stats": outboxCLI.stats, "list": outboxCLI.list, "show": outboxCLI.show, "trace": outboxCLI.trace,
		"retry": outboxCLI.retry, "skip": outboxCLI.skip, "resend": outboxCLI.resend,
		"retarget": outboxCLI.retarget, "pause": outboxCLI.pause, "resume": outboxCLI.resume,
		"audit": outboxCLI.audit,
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
	svc, closeOps, err := newOps(db, cfg, newGuard(cfg), logging.New(stderr, "finance", cfg.LogLevel))
	if err != nil {
		return err
	}
	defer closeOps()
	return cmd(outboxCLI{svc: svc, out: stdout, destination: cfg.WebhookURL}, ctx, args[1:])
}

// outboxCLI is one run of an outbox command.
type outboxCLI struct {
	svc *ops.Service
	out io.Writer
	// destination is LOGISTICS_WEBHOOK_URL: where retarget moves events, and what
	// pause and resume act on unless told otherwise.
	destination string
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
	id, err := eventArg(args[0])
	if err != nil {
		return err
	}
	d, err := c.svc.Event(ctx, id)
	if err != nil {
		return err
	}
	actions, err := c.svc.EventActions(ctx, id)
	if err != nil {
		return err
	}
	printEvent(c.out, d, actions)
	return nil
}

func eventArg(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("invalid event id %q: want a UUID", s)
	}
	return id, nil
}

// parse parses args with fs, flags before and after the positional arguments alike,
// and returns the positional ones; false when a flag is not fs's.
func parse(fs *flag.FlagSet, args []string) ([]string, bool) {
	var pos []string
	for {
		if fs.Parse(args) != nil {
			return nil, false
		}
		if fs.NArg() == 0 {
			return pos, true
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
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

// filterFlags are the event filters of list, and of retry and skip by filter.
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
	fs.IntVar(&ff.limit, "limit", 0, "page size, or most events changed")
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

// cliPrincipal names who acts from the command line, for the audit log.
func cliPrincipal() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
