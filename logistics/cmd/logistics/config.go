package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/webhookapi"
)

// Defaults of the configuration.
const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/logistics?sslmode=disable"
	defaultHTTPAddr    = "127.0.0.1:8082"
	defaultDBMaxConns  = 20
	defaultGrace       = 10 * time.Second
)

// Config is everything the binary reads from its environment, parsed once in run.
type Config struct {
	DatabaseURL    string
	HTTPAddr       string
	Tokens         auth.Tokens
	WebhookKeys    [][]byte
	MigrateOnStart bool
	DBMaxConns     int
	ShutdownGrace  time.Duration
	Retention      retentionConfig
	// BatchMaxItems bounds the items of one POST /webhooks/finance/batch.
	BatchMaxItems int
	LogLevel      slog.Level
}

// tokenRoles are the roles API_TOKENS may name: the same variable serves every handoff
// service; logistics admits warehouse tokens on the warehouse API and ops tokens on
// the ops API.
var tokenRoles = []string{"clerk", "ops", "warehouse"}

// parseConfig reads the configuration through getenv. needSecret is set for serve,
// which cannot verify webhooks without WEBHOOK_SECRET. The error names every invalid
// variable on one line and never repeats a secret.
func parseConfig(getenv func(string) string, needSecret bool) (Config, error) {
	env := envconf.New(func(name string) (string, bool) {
		v := getenv(name)
		return v, v != ""
	})
	cfg := Config{
		DatabaseURL:    env.String("DATABASE_URL", defaultDatabaseURL),
		HTTPAddr:       env.String("HTTP_ADDR", defaultHTTPAddr),
		MigrateOnStart: env.Bool("MIGRATE_ON_START", true),
		DBMaxConns:     env.Int("DB_MAX_CONNS", defaultDBMaxConns),
		ShutdownGrace:  env.Duration("SHUTDOWN_GRACE", defaultGrace),
		Retention:      parseRetention(env),
		BatchMaxItems:  env.Int("BATCH_MAX_ITEMS", webhookapi.DefaultBatchMaxItems),
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(env.String("LOG_LEVEL", "info"))); err != nil {
		env.Fail("LOG_LEVEL", "want debug, info, warn or error")
	}
	if u, err := url.Parse(cfg.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		env.Fail("DATABASE_URL", "want a postgres:// URL")
	}
	if _, _, err := net.SplitHostPort(cfg.HTTPAddr); err != nil {
		env.Fail("HTTP_ADDR", "want host:port, got %q", cfg.HTTPAddr)
	}
	tokens, err := auth.ParseTokens(env.String("API_TOKENS", ""), tokenRoles...)
	if err != nil {
		env.Fail("API_TOKENS", "%v", err)
	}
	cfg.Tokens = tokens
	switch secret := env.String("WEBHOOK_SECRET", ""); {
	case secret == "" && needSecret:
		env.Fail("WEBHOOK_SECRET", "required: the Standard Webhooks secret (whsec_<base64>) shared with finance")
	case secret != "":
		keys, err := webhook.ParseSecrets(secret)
		if err != nil {
			env.Fail("WEBHOOK_SECRET", "%v", err)
		}
		cfg.WebhookKeys = keys
	}
	if err := env.Err(); err != nil {
		return Config{}, fmt.Errorf("configuration: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return cfg, nil
}

// envHelp documents the variables in the help text.
const envHelp = `Environment:
  DATABASE_URL      postgres URL of the logistics database
                    (default ` + defaultDatabaseURL + `)
  HTTP_ADDR         listen address (default ` + defaultHTTPAddr + `)
  API_TOKENS        bearer tokens as role:token or role:name:token, comma-separated
                    (roles clerk, ops, warehouse;
                    logistics admits warehouse tokens on /v1/shipments and ops
                    tokens on /v1/ops; tokens ≥ 16 characters of ≥ 8 different
                    ones, no white space, each in one entry)
  WEBHOOK_SECRET    Standard Webhooks secret(s) whsec_<base64> of ≥ 24 bytes shared
                    with finance; several, comma-separated, during a rotation
                    (required by serve)
  MIGRATE_ON_START  apply pending migrations when serve starts (default true)
  DB_MAX_CONNS      database connection pool size (default 20)
  SHUTDOWN_GRACE    how long serve waits for requests in flight on shutdown (default 10s)
  LOG_LEVEL         debug, info, warn or error (default info)
  BATCH_MAX_ITEMS   most events one POST /webhooks/finance/batch may carry; keep it
                    at least finance's DISPATCH_BATCH (default 500)
  RETENTION_SCHEDULE       cron spec of the retention run (default "0 3 * * *")
  RETENTION_PROCESSED_AGE  processed events are deleted after (default 2160h = 90 days)
  RETENTION_BATCH          rows per retention statement (default 1000)
`
