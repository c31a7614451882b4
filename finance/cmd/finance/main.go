// Command finance is the finance service of handoff: the invoice API for clerks, the
// transactional outbox, and the dispatcher that hands paid invoices to logistics.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"handoff/pkg/integrationkit/buildinfo"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/httpserver"
)

const usage = `finance — invoices, payments, refunds, and the outbox that tells logistics.

Usage:
  finance serve                  run the API and the dispatcher (migrates first unless
                                 MIGRATE_ON_START=false)
  finance migrate up|down|version
  finance outbox stats           counts by status, oldest pending age, circuits, pauses
  finance outbox list [--status=pending|delivered|failed|skipped] [--type=] [--invoice=]
                      [--from=] [--to=] [--limit=] [--cursor=]
                                 events, newest first (--invoice takes INV-004711 or an id)
  finance outbox show <event-id> one event with every attempt, operator action and its
                                 payload
  finance outbox trace <invoice> the invoice's events, attempts, operator actions and
                                 logistics' record
  The actions below need --reason= and are written to the audit log with the OS user
  (cli:<user>) in the transaction of their change; --dry-run counts what retry or
  skip by filter would change, changing and recording nothing.
  finance outbox retry <event-id> --reason=
  finance outbox retry --status=failed|pending [--type=] [--invoice=] [--from=] [--to=]
                       [--limit=] --reason= [--dry-run]
                                 replay: due now, budget reset, history kept
  finance outbox skip <event-id> --reason=
  finance outbox skip --status=failed [--type=] [--invoice=] [--from=] [--to=]
                      [--limit=] --reason= [--dry-run]
                                 give dead letters up: never sent again, their
                                 invoices' later events go on
  finance outbox resend <event-id> --reason=
                                 send a delivered event again under its key (a
                                 receiver that has it answers duplicate)
  finance outbox retarget --from=<old URL> --reason=
                                 move pending and failed events of an old destination
                                 to LOGISTICS_WEBHOOK_URL; pending ones are due now
  finance outbox pause [--destination=] --reason=
  finance outbox resume [--destination=] --reason=
                                 stop or restart deliveries to a destination (default
                                 LOGISTICS_WEBHOOK_URL) on every replica
  finance outbox audit [--event=] [--invoice=] [--limit=] [--cursor=]
                                 the audit log, newest first
  finance retention run          archive and purge past their windows now; print counts
  finance reconcile [--since=1h|<RFC 3339 time>]
                                 compare deliveries with logistics' processed events
                                 (default: the last RECONCILE_WINDOW); exit 1 on any
                                 discrepancy
  finance healthcheck            exit 0 when the server at HTTP_ADDR answers /readyz
                                 (the container healthcheck; the image has no curl)
  finance version                print the build: module version, VCS revision, Go
  finance help [--json]          this help; with --json, the variables below as JSON
                                 (README.md's configuration table is made from it)

`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "finance:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage: finance serve | migrate up|down|version | outbox stats|list|show|trace|retry|skip|resend|retarget|pause|resume|audit | retention run | reconcile | healthcheck | version | help")

// run executes the command in args with the environment environ ("NAME=value"
// entries); it returns when the command is done or, for serve, after ctx ends and
// everything has drained. An invalid configuration returns before anything starts.
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) == 2 && args[1] == "--json" {
			return envconf.WriteJSON(stdout, (&config{}).settings().Program("finance"))
		}
		_, err := fmt.Fprint(stdout, usage+(&config{}).settings().Help())
		return err
	case "version":
		return buildinfo.Print(stdout, "finance")
	}
	cfg, err := parseConfig(environ, args[0])
	if err != nil {
		return err
	}
	switch args[0] {
	case "serve":
		return serve(ctx, cfg, stderr)
	case "migrate":
		return migrate(cfg, args[1:], stdout)
	case "retention":
		return retentionCommand(ctx, cfg, args[1:], stdout)
	case "reconcile":
		return reconcileCommand(ctx, cfg, args[1:], stdout)
	case "outbox":
		return outboxCommand(ctx, cfg, args[1:], stdout, stderr)
	case "healthcheck":
		return httpserver.Healthcheck(ctx, cfg.HTTPAddr)
	default:
		return fmt.Errorf("unknown command %q: %w", args[0], errUsage)
	}
}
