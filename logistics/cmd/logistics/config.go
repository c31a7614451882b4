package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/tracing"
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
	Tracing       tracing.Config
}

// webhookSecretHelp describes WEBHOOK_SECRET as finance does: one row of README's
// table serves both.
const webhookSecretHelp = "Standard Webhooks secret whsec_<base64> shared by finance and logistics, " +
	"each decoding to at least 24 bytes of 8 different values; several, space- or comma-separated, " +
	"during a rotation (finance signs with each, logistics accepts any)"

// tokenRoles are the roles API_TOKENS may name: the same variable serves every handoff
// service; logistics admits warehouse tokens on the warehouse API and ops tokens on
// the ops API.
var tokenRoles = []string{"clerk", "ops", "warehouse"}

// parseConfig reads the configuration from environ for command: serve needs
// API_TOKENS and WEBHOOK_SECRET, the other commands do not. The error names every
// invalid variable on one line and never repeats a secret.
func parseConfig(environ []string, command string) (Config, error) {
	var cfg Config
	if err := cfg.settings().Load(environ, command); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// settings declares every variable logistics reads, storing into c, each with its
// default, help and check. --help prints them.
func (c *Config) settings() envconf.Set {
	return envconf.Set{Settings: append([]envconf.Setting{
		envconf.Secret(envconf.String(&c.DatabaseURL, "DATABASE_URL", defaultDatabaseURL,
			"postgres URL of the service's own database", envconf.PostgresURL)),
		envconf.String(&c.HTTPAddr, "HTTP_ADDR", defaultHTTPAddr, "listen address, host:port", envconf.HostPort),
		envconf.Required(envconf.Secret(envconf.Setting{Name: "API_TOKENS",
			Help: "bearer tokens as role:token or role:name:token, comma-separated (roles clerk, ops, " +
				"warehouse; logistics admits warehouse tokens on /v1/shipments and ops tokens on /v1/ops); " +
				"each token at least 16 characters of at least 8 different ones, no ':' or white space, used once",
			Parse: func(v string) (err error) { c.Tokens, err = parseTokens(v); return err }}), "serve"),
		envconf.Required(envconf.Secret(envconf.Setting{Name: "WEBHOOK_SECRET",
			Help:  webhookSecretHelp,
			Parse: func(v string) (err error) { c.WebhookKeys, err = webhook.ParseSecrets(v); return err }}), "serve"),
		envconf.Bool(&c.MigrateOnStart, "MIGRATE_ON_START", true, "apply pending migrations when serve starts"),
		envconf.Int(&c.DBMaxConns, "DB_MAX_CONNS", defaultDBMaxConns, 1, pgdb.MaxPool,
			"database connection pool size; serve refuses to start when it exceeds the server's max_connections"),
		envconf.Duration(&c.ShutdownGrace, "SHUTDOWN_GRACE", defaultGrace, time.Second,
			"how long serve waits for requests in flight on shutdown"),
		{Name: "LOG_LEVEL", Default: "info", Help: "debug, info, warn or error", Parse: func(v string) error {
			if c.LogLevel.UnmarshalText([]byte(v)) != nil {
				return fmt.Errorf("want debug, info, warn or error, got %q", v)
			}
			return nil
		}},
		envconf.Int(&c.BatchMaxItems, "BATCH_MAX_ITEMS", webhookapi.DefaultBatchMaxItems, 1, 0,
			"most events one POST /webhooks/finance/batch may carry; keep it at least finance's DISPATCH_BATCH"),
	}, append(c.Retention.settings(), c.Tracing.Settings("logistics")...)...)}
}

// parseTokens reads API_TOKENS, which must name at least one token.
func parseTokens(v string) (auth.Tokens, error) {
	tokens, err := auth.ParseTokens(v, tokenRoles...)
	if err == nil && len(tokens.Roles()) == 0 {
		err = errors.New("holds no role:token entry")
	}
	return tokens, err
}
