package main

// usage is finance's help: every command with its flags, and the exit statuses;
// `finance help` adds the variables it reads.
const usage = `finance — invoices, payments, refunds, and the outbox that tells logistics.

Usage:
  finance serve                  run the API and the dispatcher (migrates first unless
                                 MIGRATE_ON_START=false)
  finance migrate up|down|version
  finance outbox stats [--json]  counts by status (pending: due now, in flight, the
                                 oldest one's age), circuits, pauses, the latest
                                 reconciliation
  finance outbox list [--status=pending|delivered|failed|skipped] [--type=] [--invoice=]
                      [--from=] [--to=] [--limit=] [--cursor=] [--json]
                                 events, newest first (--invoice takes INV-004711 or an
                                 id); a pending event held back by a failed one of its
                                 invoice says "waiting for <type> #<seq> (failed)"
  finance outbox show <event-id> [--json]
                                 one event with every attempt, operator action and its
                                 payload, and the failed event it waits for
  finance outbox trace <invoice> [--json]
                                 the invoice's events, attempts, operator actions and
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
                                 to LOGISTICS_WEBHOOK_URL, all due now, budget reset
  finance outbox pause [--destination=] --reason=
  finance outbox resume [--destination=] --reason=
                                 stop or restart deliveries to a destination (default
                                 LOGISTICS_WEBHOOK_URL) on every replica
  finance outbox audit [--event=] [--invoice=] [--limit=] [--cursor=] [--json]
                                 the audit log, newest first
  finance retention run          archive and purge past their windows now; print counts
  finance reconcile [--since=1h|<RFC 3339 time>] [--json]
                                 compare deliveries with logistics' processed events
                                 (default: the last RECONCILE_WINDOW); exit 0 clean,
                                 1 discrepancies found, 2 could not reconcile
  finance healthcheck            exit 0 when the server at HTTP_ADDR answers /readyz
                                 (the container healthcheck; the image has no curl)
  finance version                print the build: module version, VCS revision and
                                 time, Go version
  finance help [<command>]       this help, or a command's: flags and what it does
                                 (the same as finance <command> --help)
  finance help --json            the variables below as JSON (README.md's
                                 configuration table is made from it)

--json prints one JSON document on stdout: snake_case fields, RFC 3339 times in UTC.
Long commands (retention run, retry and skip by filter, reconcile) say what they do
on stderr. Exit status: 0 done, 1 failed, 2 a mistake on the command line (an
unknown command or flag, a bad value, a missing argument), printed on stderr with
the usage of the command it was made in.

`
