package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/webhook"
)

// config is everything finance reads from its environment, parsed once in run.
type config struct {
	DatabaseURL    string
	DBMaxConns     int
	HTTPAddr       string
	Tokens         auth.Tokens
	WebhookSecrets [][]byte
	WebhookURL     string
	OutboundAllow  egress.Allowlist
	MigrateOnStart bool
	LogLevel       slog.Level
	Dispatch       delivery.Config
	DispatchOn     bool
	Breaker        breaker.Config
	Oncall         oncallConfig
}

// envDoc documents every variable; --help prints it.
const envDoc = `Environment:
  DATABASE_URL           postgres URL of the finance database
                         (default postgres://postgres@127.0.0.1:5432/finance?sslmode=disable)
  HTTP_ADDR              listen address (default 127.0.0.1:8081)
  DB_MAX_CONNS           database connection pool size (default 8)
  API_TOKENS             role:token or role:name:token, comma-separated, with roles
                         clerk, ops, warehouse (tokens ≥ 16 chars of ≥ 8 different ones,
                         no ':' or white space, each in one entry); a name keeps a
                         caller's Idempotency-Keys across a token rotation
  WEBHOOK_SECRET         Standard Webhooks secret whsec_<base64> of ≥ 24 bytes (required
                         for serve); several, space-separated, during a rotation: each
                         one signs
  LOGISTICS_WEBHOOK_URL  where events go (default http://127.0.0.1:8082/webhooks/finance)
  OUTBOUND_ALLOW         CIDRs, IPs and host[:port] entries exempt from the SSRF deny
                         list, e.g. 127.0.0.1/32 (default none: every loopback, private
                         and link-local destination is refused, the default
                         LOGISTICS_WEBHOOK_URL included); metadata stays refused
  MIGRATE_ON_START       apply pending migrations on serve (default true)
  DISPATCH_ENABLED       run the dispatcher in this process (default true)
  DISPATCH_INTERVAL      safety-net poll (default 5s)
  DISPATCH_BATCH         most events claimed at once (default 100)
  DISPATCH_CONCURRENCY   requests in flight (default 16 in single mode, 1 in batch mode:
                         the next batch is claimed when the last is answered and takes
                         everything that arrived meanwhile; replicas add parallelism)
  DISPATCH_LEASE         claim lease, > DISPATCH_TIMEOUT + 1s (default 30s)
  DISPATCH_TIMEOUT       one request, body included (default 10s)
  DISPATCH_BACKOFF       full-jitter ceilings (default 5s,30s,5m,30m,4h)
  DISPATCH_MAX_ATTEMPTS  counted attempts before dead letter (default 8)
  DISPATCH_MODE          single (one request per event) or batch (one request per
                         claimed batch, to LOGISTICS_WEBHOOK_URL + "/batch"; default single)
  BREAKER_THRESHOLD      consecutive retryable failures that open the circuit (default 5)
  BREAKER_COOLDOWN       how long an open circuit sends nothing (default 30s)
  LOG_LEVEL              debug, info, warn or error (default info)
  SLACK_WEBHOOK_URL      Slack incoming webhook that pages on-call; or else
  SLACK_TOKEN            a bot token, with
  SLACK_CHANNEL          the channel it posts to; with neither, alerts are only logged
  SLACK_API_URL          Slack Web API base for SLACK_TOKEN (default https://slack.com/api/)
  DASHBOARD_URL          linked from every page (default http://<HTTP_ADDR>/ops/)
  ALERT_PENDING_AGE      page when the oldest pending event is older (default 5m)
  ALERT_GATHER           a new alert waits this long to count its companions (default 5s)
  ALERT_REPEAT           least time between two messages of one alert (default 1m)
  RETENTION_SCHEDULE     cron spec of the retention run (default "0 3 * * *")
  RETENTION_OUTBOX_AGE   delivered events move to the archive after (default 720h)
  RETENTION_ARCHIVE_AGE  archived events are deleted after (default 8760h)
  RETENTION_IDEMPOTENCY_AGE  Idempotency-Key records are deleted after (default 24h)
  RETENTION_BATCH        rows per retention statement (default 1000)
  RECONCILE_SCHEDULE     cron spec of reconciliation with logistics (default "@every 10m")
  RECONCILE_WINDOW       trailing window each scheduled run compares (default 1h)
  RECONCILE_OVERDUE      a pending event this late past its next attempt is reported
                         (default 15m)
  LOGISTICS_API_URL      logistics' base URL for its ops API (default: scheme and host
                         of LOGISTICS_WEBHOOK_URL)
  LOGISTICS_OPS_TOKEN    ops token of logistics; unset turns scheduled reconciliation off
                         and the invoice trace shows "logistics record unavailable"
`

func parseConfig(lookup func(string) (string, bool)) (config, error) {
	env := envconf.New(lookup)
	c := config{
		DatabaseURL:    env.String("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/finance?sslmode=disable"),
		DBMaxConns:     env.Int("DB_MAX_CONNS", 0),
		HTTPAddr:       env.String("HTTP_ADDR", "127.0.0.1:8081"),
		WebhookURL:     env.String("LOGISTICS_WEBHOOK_URL", "http://127.0.0.1:8082/webhooks/finance"),
		MigrateOnStart: env.Bool("MIGRATE_ON_START", true),
		DispatchOn:     env.Bool("DISPATCH_ENABLED", true),
		Dispatch: delivery.Config{
			Interval:    env.Duration("DISPATCH_INTERVAL", 5*time.Second),
			Batch:       env.Int("DISPATCH_BATCH", 100),
			Lease:       env.Duration("DISPATCH_LEASE", 30*time.Second),
			Timeout:     env.Duration("DISPATCH_TIMEOUT", 10*time.Second),
			Backoff:     env.Durations("DISPATCH_BACKOFF", backoff.DefaultSchedule),
			MaxAttempts: env.Int("DISPATCH_MAX_ATTEMPTS", 8),
			Mode:        env.String("DISPATCH_MODE", delivery.ModeSingle),
		},
		Breaker: breaker.Config{
			Table:     "finance_breakers",
			Threshold: env.Int("BREAKER_THRESHOLD", 5),
			Cooldown:  env.Duration("BREAKER_COOLDOWN", 30*time.Second),
		},
	}
	c.Dispatch.Concurrency = env.Int("DISPATCH_CONCURRENCY", defaultConcurrency(c.Dispatch.Mode))
	c.Breaker.ProbeLease = c.Dispatch.Lease
	c.Oncall = parseOncall(env, c.HTTPAddr, c.WebhookURL)
	if err := c.LogLevel.UnmarshalText([]byte(env.String("LOG_LEVEL", "info"))); err != nil {
		env.Fail("LOG_LEVEL", "want debug, info, warn or error")
	}
	if _, err := url.Parse(c.DatabaseURL); err != nil || !strings.HasPrefix(c.DatabaseURL, "postgres") {
		env.Fail("DATABASE_URL", "want a postgres:// URL")
	}
	c.checkWebhookURL(env)
	allow, err := egress.ParseAllowlist(env.String("OUTBOUND_ALLOW", ""))
	if err != nil {
		env.Fail("OUTBOUND_ALLOW", "%v", err)
	}
	c.OutboundAllow = allow
	tokens, err := auth.ParseTokens(env.String("API_TOKENS", ""), "clerk", "ops", "warehouse")
	if err != nil {
		env.Fail("API_TOKENS", "%v", err)
	}
	c.Tokens = tokens
	if raw := env.String("WEBHOOK_SECRET", ""); raw != "" {
		keys, err := webhook.ParseSecrets(raw)
		if err != nil {
			env.Fail("WEBHOOK_SECRET", "%v", err)
		}
		c.WebhookSecrets = keys
	}
	if err := env.Err(); err != nil {
		return config{}, err
	}
	if m := c.Dispatch.Mode; m != delivery.ModeSingle && m != delivery.ModeBatch {
		return config{}, fmt.Errorf("invalid DISPATCH_MODE: want single or batch, got %q", m)
	}
	if err := c.Dispatch.Validate(); err != nil {
		return config{}, fmt.Errorf("invalid DISPATCH_LEASE: %w", err)
	}
	return c, nil
}

// defaultConcurrency is DISPATCH_CONCURRENCY when unset. In batch mode each request
// carries a whole claim, so one is in flight per replica: the next claim waits for
// its answer and takes everything that arrived meanwhile, the busier the bigger.
// make bench-short on two cores, batch mode at saturation: 16 in flight sent 12
// events per request and delivered 0.45 of the producer ceiling; 2 sent 28 and
// delivered 0.50; 1 sent 81 and delivered 0.54, with p99 pay→shipment 35–52 ms at
// half the saturation rate.
func defaultConcurrency(mode string) int {
	if mode == delivery.ModeBatch {
		return 1
	}
	return 16
}

// checkWebhookURL admits an absolute http(s) URL without credentials; a rejected URL
// is echoed with any password redacted.
func (c config) checkWebhookURL(env *envconf.Env) {
	u, err := url.Parse(c.WebhookURL)
	if err != nil {
		env.Fail("LOGISTICS_WEBHOOK_URL", "want an absolute http(s) URL")
		return
	}
	if err := egress.CheckURL(u); err != nil {
		env.Fail("LOGISTICS_WEBHOOK_URL", "want an absolute http(s) URL without user info, got %q", u.Redacted())
	}
}
