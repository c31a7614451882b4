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
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/webhook"
)

// config is everything finance reads from its environment, parsed once in run.
type config struct {
	DatabaseURL    string
	HTTPAddr       string
	Tokens         auth.Tokens
	WebhookSecrets [][]byte
	WebhookURL     string
	MigrateOnStart bool
	LogLevel       slog.Level
	Dispatch       delivery.Config
	DispatchOn     bool
	Breaker        breaker.Config
}

// envDoc documents every variable; --help prints it.
const envDoc = `Environment:
  DATABASE_URL           postgres URL of the finance database
                         (default postgres://postgres@127.0.0.1:5432/finance?sslmode=disable)
  HTTP_ADDR              listen address (default 127.0.0.1:8081)
  API_TOKENS             role:token,... with roles clerk, ops, warehouse (tokens ≥ 16 chars)
  WEBHOOK_SECRET         Standard Webhooks secret whsec_<base64> (required for serve);
                         several, space-separated, during a rotation: each one signs
  LOGISTICS_WEBHOOK_URL  where events go (default http://127.0.0.1:8082/webhooks/finance)
  MIGRATE_ON_START       apply pending migrations on serve (default true)
  DISPATCH_ENABLED       run the dispatcher in this process (default true)
  DISPATCH_INTERVAL      safety-net poll (default 5s)
  DISPATCH_BATCH         most events claimed at once (default 100)
  DISPATCH_CONCURRENCY   requests in flight (default 16)
  DISPATCH_LEASE         claim lease, > DISPATCH_TIMEOUT + 1s (default 30s)
  DISPATCH_TIMEOUT       one request, body included (default 10s)
  DISPATCH_BACKOFF       full-jitter ceilings (default 5s,30s,5m,30m,4h)
  DISPATCH_MAX_ATTEMPTS  counted attempts before dead letter (default 8)
  BREAKER_THRESHOLD      consecutive retryable failures that open the circuit (default 5)
  BREAKER_COOLDOWN       how long an open circuit sends nothing (default 30s)
  LOG_LEVEL              debug, info, warn or error (default info)
`

func parseConfig(lookup func(string) (string, bool)) (config, error) {
	env := envconf.New(lookup)
	c := config{
		DatabaseURL:    env.String("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/finance?sslmode=disable"),
		HTTPAddr:       env.String("HTTP_ADDR", "127.0.0.1:8081"),
		WebhookURL:     env.String("LOGISTICS_WEBHOOK_URL", "http://127.0.0.1:8082/webhooks/finance"),
		MigrateOnStart: env.Bool("MIGRATE_ON_START", true),
		DispatchOn:     env.Bool("DISPATCH_ENABLED", true),
		Dispatch: delivery.Config{
			Interval:    env.Duration("DISPATCH_INTERVAL", 5*time.Second),
			Batch:       env.Int("DISPATCH_BATCH", 100),
			Concurrency: env.Int("DISPATCH_CONCURRENCY", 16),
			Lease:       env.Duration("DISPATCH_LEASE", 30*time.Second),
			Timeout:     env.Duration("DISPATCH_TIMEOUT", 10*time.Second),
			Backoff:     env.Durations("DISPATCH_BACKOFF", backoff.DefaultSchedule),
			MaxAttempts: env.Int("DISPATCH_MAX_ATTEMPTS", 8),
		},
		Breaker: breaker.Config{
			Table:     "finance_breakers",
			Threshold: env.Int("BREAKER_THRESHOLD", 5),
			Cooldown:  env.Duration("BREAKER_COOLDOWN", 30*time.Second),
		},
	}
	c.Breaker.ProbeLease = c.Dispatch.Lease
	if err := c.LogLevel.UnmarshalText([]byte(env.String("LOG_LEVEL", "info"))); err != nil {
		env.Fail("LOG_LEVEL", "want debug, info, warn or error")
	}
	if _, err := url.Parse(c.DatabaseURL); err != nil || !strings.HasPrefix(c.DatabaseURL, "postgres") {
		env.Fail("DATABASE_URL", "want a postgres:// URL")
	}
	if u, err := url.Parse(c.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		env.Fail("LOGISTICS_WEBHOOK_URL", "want an absolute http(s) URL, got %q", c.WebhookURL)
	}
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
	if err := c.Dispatch.Validate(); err != nil {
		return config{}, fmt.Errorf("invalid DISPATCH_LEASE: %w", err)
	}
	return c, nil
}
