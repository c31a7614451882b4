package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/outbox"
)

// The outbox commands that act: each takes --reason and is recorded in the audit log
// with cliPrincipal as the actor.

const reasonHelp = "`why` you act, for the audit log (required)"

// outboxActions declares the outbox commands that change events or destinations.
func (e env) outboxActions() []cli.Command {
	return []cli.Command{
		e.onEvents(cli.Command{Name: "outbox retry", Summary: "replay events: due now, budget reset, history kept",
			Help: "Replay the event named, or every event the filters select (--status=failed or\n" +
				"pending is then required, so a bare retry never replays everything): it becomes\n" +
				"pending and due now with its attempt budget reset; its history stays. --dry-run\n" +
				"counts what would be replayed, changing and recording nothing.",
		}, (*ops.Service).RetryEvent, (*ops.Service).RetryMatching,
			func(ev outbox.StoredEvent) string {
				return fmt.Sprintf("replayed %s (%s of invoice %s): pending, due now, budget reset; %d requests so far",
					ev.ID, ev.EventType, ev.AggregateKey, ev.Requests)
			}, wording{verb: "replay", doing: "replaying", statuses: "failed or pending", doneN: "replayed %d events: pending, due now, budget reset"}),
		e.onEvents(cli.Command{Name: "outbox skip", Summary: "give dead letters up: never sent again",
			Help: "Give up the dead letter named, or every dead letter the filters select\n" +
				"(--status=failed is then required): it is never sent again, and its invoice's\n" +
				"later events go on. --dry-run counts what would be skipped, changing and recording\n" +
				"nothing.",
		}, (*ops.Service).Skip, (*ops.Service).SkipMatching,
			func(ev outbox.StoredEvent) string {
				return fmt.Sprintf("skipped %s (%s of invoice %s): never sent again; the invoice's later events go on",
					ev.ID, ev.EventType, ev.AggregateKey)
			}, wording{verb: "skip", doing: "skipping", statuses: "failed",
				doneN: "skipped %d dead letters: never sent again; their invoices' later events go on"}),
		{
			Name: "outbox resend", Args: "<event-id>", MinArgs: 1, MaxArgs: 1,
			Summary: "send a delivered event again under its key",
			Help: "Send a delivered event again under its idempotency key: it is pending and due now\n" +
				"(a receiver that has it answers duplicate).",
			Setup: func(fs *flag.FlagSet) cli.Runner {
				reason := fs.String("reason", "", reasonHelp)
				return func(ctx context.Context, args []string) error {
					id, err := eventArg(args[0])
					if err != nil {
						return err
					}
					return e.withOutbox(ctx, func(c outboxCLI) error { return c.resend(ctx, id, c.action(*reason)) })
				}
			},
		}, {
			Name: "outbox retarget", Summary: "move undelivered events of an old destination to LOGISTICS_WEBHOOK_URL",
			Help: "Move the pending and failed events of an old destination to LOGISTICS_WEBHOOK_URL:\n" +
				"all due now with a fresh budget, dead letters included.",
			Setup: func(fs *flag.FlagSet) cli.Runner {
				from := fs.String("from", "", "the old destination's `URL` (required)")
				reason := fs.String("reason", "", reasonHelp)
				return func(ctx context.Context, _ []string) error {
					if *from == "" {
						return cli.Usagef("--from is required: the old destination")
					}
					return e.withOutbox(ctx, func(c outboxCLI) error { return c.retarget(ctx, *from, c.action(*reason)) })
				}
			},
		},
		e.destinationCommand("pause", "stop deliveries to a destination on every replica"),
		e.destinationCommand("resume", "restart deliveries to a paused destination"),
	}
}

// action is an action of the OS user for reason.
func (outboxCLI) action(reason string) ops.Action {
	return ops.Action{Actor: cliPrincipal(), Reason: reason}
}

type (
	oneAction  func(*ops.Service, context.Context, uuid.UUID, ops.Action) (outbox.StoredEvent, error)
	bulkAction func(*ops.Service, context.Context, ops.Matching, ops.Action) (outbox.BulkResult, error)
)

// wording is how an action by filter speaks of itself: "would <verb> 3 events",
// "<doing> the events matching …", and doneN with the count once done.
type wording struct {
	verb, doing, doneN string
	// statuses says which --status the action by filter takes.
	statuses string
}

// onEvents declares cmd, an action on the event named by its one argument, or by
// filter on the events the flags select: done describes one event changed, w the
// changes by filter.
func (e env) onEvents(cmd cli.Command, one oneAction, many bulkAction,
	done func(outbox.StoredEvent) string, w wording) cli.Command {
	cmd.Args, cmd.MaxArgs = "[<event-id>]", 1
	cmd.Setup = func(fs *flag.FlagSet) cli.Runner {
		var ff filterFlags
		ff.declare(fs, w.statuses, "most events changed by filter (default 1000, at most 10000)")
		reason := fs.String("reason", "", reasonHelp)
		dryRun := fs.Bool("dry-run", false, "only count the events the action by filter would change")
		return func(ctx context.Context, args []string) error {
			switch {
			case len(args) == 1 && (ff.set() || *dryRun):
				return cli.Usagef("an event id takes no filter and no --dry-run")
			case len(args) == 1:
				id, err := eventArg(args[0])
				if err != nil {
					return err
				}
				return e.withOutbox(ctx, func(c outboxCLI) error {
					ev, err := one(c.svc, ctx, id, c.action(*reason))
					if err != nil {
						return err
					}
					_, err = fmt.Fprintln(c.out, done(ev))
					return err
				})
			case ff.status == "":
				return cli.Usagef("want an event id, or --status= and the other filters to act on the events they select")
			}
			return e.withOutbox(ctx, func(c outboxCLI) error {
				f, err := ff.filter(ctx, c.svc)
				if err != nil {
					return err
				}
				return c.matching(ctx, ops.Matching{Filter: f, DryRun: *dryRun}, c.action(*reason), many, w)
			})
		}
	}
	return cmd
}

// matching runs an action by filter. It is one statement in one transaction, with
// nothing to report midway: it says on progress what it is doing before, and prints
// the result after.
func (c outboxCLI) matching(ctx context.Context, m ops.Matching, act ops.Action, many bulkAction, w wording) error {
	limit := cmp.Or(m.Filter.Limit, outbox.DefaultRetryLimit)
	doing := w.doing
	if m.DryRun {
		doing = "counting what " + w.verb + " would change of"
	}
	fmt.Fprintf(c.progress, "outbox: %s the events matching %s (at most %d), in one statement\n", doing, describe(m.Filter), limit)
	res, err := many(c.svc, ctx, m, act)
	if err != nil {
		return err
	}
	if m.DryRun {
		_, err = fmt.Fprintf(c.out, "dry run: would %s %d events; nothing changed\n", w.verb, res.Count)
	} else {
		_, err = fmt.Fprintf(c.out, w.doneN+"\n", res.Count)
	}
	if err == nil && res.More {
		_, err = fmt.Fprintf(c.out, "more events match (limit %d): run the command again\n", limit)
	}
	return err
}

// describe says what a filter selects, as the flags that set it.
func describe(f outbox.Filter) string {
	var parts []string
	for _, kv := range [][2]string{{"status", f.Status}, {"type", f.Type}, {"invoice", f.AggregateKey}} {
		if kv[1] != "" {
			parts = append(parts, "--"+kv[0]+"="+clean(kv[1], 0))
		}
	}
	if !f.CreatedFrom.IsZero() {
		parts = append(parts, "--from="+stamp(f.CreatedFrom))
	}
	if !f.CreatedTo.IsZero() {
		parts = append(parts, "--to="+stamp(f.CreatedTo))
	}
	return strings.Join(parts, " ")
}

// resend sends one delivered event again under its key.
func (c outboxCLI) resend(ctx context.Context, id uuid.UUID, act ops.Action) error {
	ev, err := c.svc.Resend(ctx, id, act)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "resent %s (%s of invoice %s) under key %s: pending, due now; %d requests so far\n",
		ev.ID, ev.EventType, ev.AggregateKey, clean(ev.IdempotencyKey, 0), ev.Requests)
	return err
}

// retarget moves the undelivered events of an old destination to LOGISTICS_WEBHOOK_URL.
func (c outboxCLI) retarget(ctx context.Context, from string, act ops.Action) error {
	n, err := c.svc.Retarget(ctx, from, act)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "moved %d undelivered events from %s to %s: all due now with a fresh budget, dead letters included\n",
		n, clean(from, 0), clean(c.destination, 0))
	return err
}

// destinationCommand declares `outbox pause` or `outbox resume` of a destination
// (LOGISTICS_WEBHOOK_URL by default).
func (e env) destinationCommand(name, summary string) cli.Command {
	return cli.Command{Name: "outbox " + name, Summary: summary,
		Help: summary + " (default LOGISTICS_WEBHOOK_URL).\n" +
			"A pause holds pending events without spending attempts; a resume makes them due at once.",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			dest := fs.String("destination", "", "the destination's `URL` (default LOGISTICS_WEBHOOK_URL)")
			reason := fs.String("reason", "", reasonHelp)
			return func(ctx context.Context, _ []string) error {
				return e.withOutbox(ctx, func(c outboxCLI) error {
					d := cmp.Or(*dest, c.destination)
					if name == "pause" {
						return c.pause(ctx, d, c.action(*reason))
					}
					return c.resume(ctx, d, c.action(*reason))
				})
			}
		},
	}
}

// pause stops deliveries to a destination.
func (c outboxCLI) pause(ctx context.Context, dest string, act ops.Action) error {
	if err := c.svc.Pause(ctx, dest, act); err != nil {
		return err
	}
	_, err := fmt.Fprintf(c.out, "paused %s: no replica sends to it until `finance outbox resume`\n", clean(dest, 0))
	return err
}

// resume lets deliveries to a destination go again.
func (c outboxCLI) resume(ctx context.Context, dest string, act ops.Action) error {
	n, err := c.svc.Resume(ctx, dest, act)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "resumed %s: %d deferred events due now\n", clean(dest, 0), n)
	return err
}

// auditCommand declares `outbox audit`: the audit log, newest first, of everything or
// of one event or invoice.
func (e env) auditCommand() cli.Command {
	return cli.Command{
		Name: "outbox audit", Summary: "the audit log, newest first",
		Help: "List the audit log, newest first: who did what, when and why, and how many events\n" +
			"it changed; of everything, or of one event or invoice.",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			var q audit.Query
			fs.Func("event", "the actions that changed this event (its `id`)", func(v string) error {
				id, err := uuid.Parse(v)
				if err != nil {
					return fmt.Errorf("want a UUID")
				}
				q.EventID = &id
				return nil
			})
			inv := fs.String("invoice", "", "the actions on this `invoice`: INV-004711, 4711 or its id")
			fs.IntVar(&q.Limit, "limit", 0, "page size (default "+strconv.Itoa(audit.DefaultLimit)+", at most "+
				strconv.Itoa(audit.MaxLimit)+")")
			cursor := fs.String("cursor", "", "continue after a previous page (`cursor` printed by it)")
			asJSON := jsonFlag(fs)
			return func(ctx context.Context, _ []string) error {
				if *cursor != "" {
					cur, err := audit.ParseCursor(*cursor)
					if err != nil {
						return cli.BadUsage(fmt.Errorf("invalid --cursor: %w", err))
					}
					q.After = &cur
				}
				return e.withOutbox(ctx, func(c outboxCLI) error {
					if *inv != "" {
						id, err := c.svc.InvoiceID(ctx, *inv)
						if err != nil {
							return err
						}
						q.InvoiceID = &id
					}
					page, err := c.svc.Audit(ctx, q)
					if err != nil {
						return err
					}
					if *asJSON {
						return writeJSON(c.out, newAuditPageDoc(page))
					}
					printAuditPage(c.out, page)
					return nil
				})
			}
		},
	}
}
