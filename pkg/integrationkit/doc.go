// Package integrationkit is the reusable kit behind handoff: the pieces two services
// need to hand work to each other exactly once in effect over HTTP, with PostgreSQL as
// the only store and the only queue.
//
// The packages, by job:
//
//   - pgdb: open a bun database on pgx, run embedded golang-migrate migrations,
//     classify PostgreSQL errors, check the table names the kit's packages are given,
//     and run a transaction in as few round trips as its reads allow (Pipe).
//   - outbox: enqueue an event in the caller's transaction; claim, lease and settle it;
//     inspect it and replay dead letters (keeping their history) for operators.
//   - delivery: the dispatcher that drains an outbox over HTTP (retries, backoff,
//     Retry-After, dead letters, per-aggregate order).
//   - backoff: full-jitter schedules and Retry-After parsing.
//   - webhook: Standard Webhooks signing and verification.
//   - egress: the SSRF guard of outgoing requests (a dialer that checks the address
//     actually dialed, an allowlist) and NewClient, the one constructor of the HTTP
//     clients the kit and its services send with, and ReadBody for bounded bodies.
//   - inbox: the idempotent consumer (apply each key once, in the business transaction).
//   - wire: the limits of every value that crosses the wire (keys, identifiers,
//     amounts, currency codes), checked alike by the sender and the receiver.
//   - idempotency: Stripe-style Idempotency-Key middleware for echo.
//   - problem, auth: problem+json errors (and the one table per API that maps its
//     domain errors to them), bearer tokens per role (and browser sessions sealed
//     with them).
//   - cursor: the opaque, versioned tokens of keyset paginations.
//   - envconf: configuration from the environment, each variable declared once with
//     its default, help and check; every problem of a start reported on one line.
//   - strict: request input with one meaning: JSON decoding that refuses duplicate
//     members, case-only member matches, deep nesting and trailing data, and a check
//     of the query parameters each route takes.
//   - cli: the command line of a binary: each command's flags declared once, its
//     usage on --help and after a mistake (exit status 2), exit statuses by error type.
//   - command: the skeleton of a service binary: main, one run signature, and the
//     commands every service has (migrate, retention run, healthcheck, version,
//     help --json) built once over the binary's configuration.
//   - pgtest: a fresh, migrated PostgreSQL database per test. The other test helpers
//     sit beside what they test: outbox/outboxtest and inbox/inboxtest (conformance
//     suites for an adopter's tables), egress/egresstest (counting listeners, the
//     guard's refusals, the proxy-environment check) and command/commandtest (one
//     suite for the standard commands of a binary). Only tests import them.
//   - pager: on-call alerts, deduplicated and rate-limited across replicas in
//     PostgreSQL, sent to Slack off the delivery path.
//   - retention: batched, idempotent purge and archive jobs under an advisory lock.
//   - schedule: robfig/cron jobs under the Run(ctx) error runner contract.
//   - metrics: Prometheus /metrics for a sender (outbox, deliveries, circuits) and a
//     receiver (webhook answers, duplicates, latency).
//   - tracing: OpenTelemetry spans over OTLP/HTTP when an endpoint is configured (off,
//     and free, otherwise), and the W3C traceparent carried from a request through an
//     outbox row and its delivery to the receiver.
//
// A third service adopts it by embedding its migrations (with an outbox table shaped
// like the one documented in package outbox), calling outbox.Enqueue inside its own
// transactions and running a delivery.Dispatcher; the receiving side wraps its handler
// in inbox.Process, whose apply function writes through a pgdb.Runner.
package integrationkit
