// Package integrationkit is the reusable kit behind handoff: the pieces two services
// need to hand work to each other exactly once in effect over HTTP, with PostgreSQL as
// the only store and the only queue.
//
// The packages, by job:
//
//   - pgdb: open a bun database on pgx, run embedded golang-migrate migrations,
//     classify PostgreSQL errors.
//   - outbox: enqueue an event in the caller's transaction; claim, lease and settle it.
//   - delivery: the dispatcher that drains an outbox over HTTP (retries, backoff,
//     Retry-After, dead letters, per-aggregate order).
//   - backoff: full-jitter schedules and Retry-After parsing.
//   - webhook: Standard Webhooks signing and verification.
//   - inbox: the idempotent consumer (apply each key once, in the business transaction).
//   - idempotency: Stripe-style Idempotency-Key middleware for echo.
//   - problem, auth, envconf: problem+json errors, bearer tokens per role, config.
//   - pgtest: a fresh, migrated PostgreSQL database per test.
//
// A third service adopts it by embedding its migrations (with an outbox table shaped
// like the one documented in package outbox), calling outbox.Enqueue inside its own
// transactions and running a delivery.Dispatcher; the receiving side wraps its handler
// in inbox.Process.
package integrationkit
