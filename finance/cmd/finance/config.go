package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/tracing"
	"handoff/pkg/integrationkit/webhook"
)

// config is everything finance reads from its environment, parsed once in run.
type config struct {
	DatabaseURL    string
	DBMaxConns     int
	HTTPAddr       string
	TrustedProxies httpserver.Proxies
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
	Tracing        tracing.Config
}

// webhookSecretHelp describes WEBHOOK_SECRET as logistics does: one row of README's
// table serves both.
const webhookSecretHelp = "Standard Webhooks secret whsec_<base64> shared by finance and logistics, " +
	"each decoding to at least 24 bytes of 8 different values; several, space- or comma-separated, " +
	"during a rotation (finance signs with each, logistics accepts any)"

// tokenRoles are the roles API_TOKENS may name.
var tokenRoles = []string{"clerk", "ops", "warehouse"}

// breakerTable is finance's circuit table (breaker.Schema).
const breakerTable = "finance_breakers"

// parseConfig reads finance's variables from environ for command (serve needs
// API_TOKENS and WEBHOOK_SECRET; the other commands do not). The error names every
// invalid variable on one line and never repeats a secret.
func parseConfig(environ []string, command string) (config, error) {
	c := config{Breaker: breaker.Config{Table: breakerTable}}
	if err := c.settings().Load(environ, command); err != nil {
		return config{}, err
	}
	c.Breaker.ProbeLease = c.Dispatch.Lease
	return c, nil
}

// settings declares every variable finance reads, storing into c: each with its
// default, help and check, and the rules across them. --help prints them.
func (c *config) settings() envconf.Set {
	set := envconf.Set{Settings: []envconf.Setting{
		envconf.Secret(envconf.String(&c.DatabaseURL, "DATABASE_URL",
			"postgres://postgres@127.0.0.1:5432/finance?sslmode=disable",
			"postgres URL of the service's own database", envconf.PostgresURL)),
		envconf.Int(&c.DBMaxConns, "DB_MAX_CONNS", defaultDBMaxConns, 1, pgdb.MaxPool,
			"pool of the API and the on-call jobs; serve refuses to start when it, with "+
				"the dispatcher's "+strconv.Itoa(dispatchDBConns)+", exceeds the server's max_connections"),
		envconf.String(&c.HTTPAddr, "HTTP_ADDR", "127.0.0.1:8081", "listen address, host:port", envconf.HostPort),
		{Name: "TRUSTED_PROXIES", Help: "CIDRs or IPs, comma-separated, of the reverse proxies whose " +
			"X-Forwarded-For and X-Forwarded-Proto are believed (default none: the client is the " +
			"connection's peer, loopback included)",
			Parse: func(v string) (err error) { c.TrustedProxies, err = httpserver.ParseProxies(v); return err }},
		envconf.Required(envconf.Secret(envconf.Setting{Name: "API_TOKENS",
			Help: "role:token or role:name:token, comma-separated, with roles clerk, ops, " +
				"warehouse; each token at least 16 characters of at least 8 different ones, no " +
				"':' or white space, used once; a name keeps a caller's Idempotency-Keys across " +
				"a token rotation (an unnamed token is a caller of its own)",
			Parse: func(v string) (err error) { c.Tokens, err = parseTokens(v); return err }}), "serve"),
		envconf.Required(envconf.Secret(envconf.Setting{Name: "WEBHOOK_SECRET",
			Help:  webhookSecretHelp,
			Parse: func(v string) (err error) { c.WebhookSecrets, err = webhook.ParseSecrets(v); return err }}), "serve"),
		envconf.String(&c.WebhookURL, "LOGISTICS_WEBHOOK_URL", "http://127.0.0.1:8082/webhooks/finance",
			"where events go", envconf.HTTPURL),
		{Name: "OUTBOUND_ALLOW", Help: "CIDRs, IPs and host[:port] entries exempt from the SSRF deny " +
			"list, e.g. 127.0.0.1/32 (default none: every loopback, private and link-local " +
			"destination is refused, the default LOGISTICS_WEBHOOK_URL included); metadata " +
			"stays refused",
			Parse: func(v string) (err error) { c.OutboundAllow, err = egress.ParseAllowlist(v); return err }},
		envconf.Bool(&c.MigrateOnStart, "MIGRATE_ON_START", true, "apply pending migrations when serve starts"),
		{Name: "LOG_LEVEL", Default: "info", Help: "debug, info, warn or error", Parse: func(v string) error {
			if c.LogLevel.UnmarshalText([]byte(v)) != nil {
				return fmt.Errorf("want debug, info, warn or error, got %q", v)
			}
			return nil
		}},
	}}
	dispatch, dispatchRules := c.dispatchSettings()
	oncall, oncallRules := c.Oncall.settings(&c.HTTPAddr, &c.WebhookURL)
	set.Settings = append(append(append(set.Settings, dispatch...), oncall...), c.Tracing.Settings("finance")...)
	set.Rules = append(dispatchRules, oncallRules...)
	return set
}

// dispatchSettings declares the dispatcher's and the circuit breaker's variables.
func (c *config) dispatchSettings() ([]envconf.Setting, []envconf.Rule) {
	d := &c.Dispatch
	concurrency := envconf.Int(&d.Concurrency, "DISPATCH_CONCURRENCY", 0, 1, 0,
		"requests in flight: in batch mode the next batch is claimed when the last is "+
			"answered and takes everything that arrived meanwhile, and a second goes at once "+
			"only while claims come back full (a backlog); replicas add parallelism")
	concurrency.Default = fmt.Sprintf("%d in single mode, %d in batch mode",
		defaultConcurrency(delivery.ModeSingle), defaultConcurrency(delivery.ModeBatch))
	concurrency.DefaultFrom = func() string { return strconv.Itoa(defaultConcurrency(d.Mode)) }
	settings := []envconf.Setting{
		envconf.Bool(&c.DispatchOn, "DISPATCH_ENABLED", true, "run the dispatcher in this process"),
		envconf.Duration(&d.Interval, "DISPATCH_INTERVAL", 5*time.Second, 100*time.Millisecond, "safety-net poll"),
		envconf.Int(&d.Batch, "DISPATCH_BATCH", delivery.DefaultBatch, 1, 0, "most events claimed at once"),
		envconf.String(&d.Mode, "DISPATCH_MODE", delivery.ModeBatch,
			"batch (one request per claimed batch to LOGISTICS_WEBHOOK_URL + \"/batch\"; a lone "+
				"event goes at once, a receiver without the endpoint gets single requests) or "+
				"single (one request per event)", checkMode),
		concurrency,
		envconf.Duration(&d.Lease, "DISPATCH_LEASE", 30*time.Second, 3*time.Second,
			"claim lease, more than DISPATCH_TIMEOUT + 1s"),
		envconf.Duration(&d.Timeout, "DISPATCH_TIMEOUT", 10*time.Second, time.Second, "one request, body included"),
		envconf.Durations(&d.Backoff, "DISPATCH_BACKOFF", backoff.Schedule(backoff.DefaultSchedule), 50*time.Millisecond,
			"full-jitter ceilings, comma-separated"),
		envconf.Int(&d.MaxAttempts, "DISPATCH_MAX_ATTEMPTS", 8, 1, 0, "counted attempts before dead letter"),
		envconf.Int(&c.Breaker.Threshold, "BREAKER_THRESHOLD", 5, 1, 0,
			"consecutive retryable failures that open the circuit"),
		envconf.Duration(&c.Breaker.Cooldown, "BREAKER_COOLDOWN", 30*time.Second, 100*time.Millisecond,
			"how long an open circuit sends nothing"),
	}
	rules := []envconf.Rule{{Name: "DISPATCH_LEASE", Check: func() error { return d.Validate() },
		Uses: []string{"DISPATCH_TIMEOUT", "DISPATCH_BATCH", "DISPATCH_CONCURRENCY", "DISPATCH_MAX_ATTEMPTS",
			"DISPATCH_MODE", "DISPATCH_BACKOFF"}}}
	return settings, rules
}

// parseTokens reads API_TOKENS, which must name at least one token.
func parseTokens(v string) (auth.Tokens, error) {
	tokens, err := auth.ParseTokens(v, tokenRoles...)
	if err == nil && len(tokens.Roles()) == 0 {
		err = errors.New("holds no role:token entry")
	}
	return tokens, err
}

// checkMode admits the dispatcher's two modes.
func checkMode(m string) error {
	if m != delivery.ModeSingle && m != delivery.ModeBatch {
		return fmt.Errorf("want %s or %s, got %q", delivery.ModeSingle, delivery.ModeBatch, m)
	}
	return nil
}

// defaultConcurrency is DISPATCH_CONCURRENCY when unset. In batch mode each request
// carries a whole claim: the next claim waits for its answer and takes everything
// that arrived meanwhile, the busier the bigger, and a second batch goes at once only
// while claims come back full. make bench-short on two cores, batch mode at
// saturation: 16 in flight, each claiming at will, sent 12 events per request and
// delivered 0.45 of the producer ceiling; 1 sent 81 and delivered 0.54. With the
// second batch held back until a claim is full, 2 in flight (and claims of 400, not
// 100) sent 77–88 events per request at saturation in make bench-short, as 1 did
// (56.5 in one full-length run, where a standing backlog fills claims), and drained
// 20,000 seeded events with one replica at 6,701 events/s against 4,050. In single
// mode each request carries one event, so many go at once: make bench-short's drain
// of 1,500 seeded events went from 856 events/s with 16 in flight to 1,284 with 64,
// as each claim and each settling statement then carries several events; in
// alternating drains of 20,000 by one dispatcher, 100 delivered 1,109-1,239 events/s
// where 64 delivered 955-982.
func defaultConcurrency(mode string) int {
	if mode == delivery.ModeBatch {
		return delivery.BatchConcurrency
	}
	return delivery.SingleConcurrency
}
