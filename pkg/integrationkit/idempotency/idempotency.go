// Package idempotency implements Stripe-style Idempotency-Key handling for echo: the
// first response to a POST carrying the header is stored with a hash of the request,
// and a retry with the same key gets that response again instead of running the
// handler a second time.
//
// For one principal and one key:
//   - first use: the handler runs inside a transaction that holds the key; its changes
//     join that transaction (pgdb.RunInTx on the request's context) and its response
//     (status, the headers it set, body) is stored in it before the commit, then sent.
//     A change and the answer reporting it commit together or not at all. A 5xx answer
//     or a panic rolls everything back, so a retry runs again.
//   - same key, same request, first one finished: the stored response byte for byte,
//     with the header Idempotent-Replayed: true.
//   - same key, different request (method, path with query, or body compared as
//     canonical JSON): 422.
//   - same key while the first is still running: 409 with Retry-After: 1. A request
//     whose process died holds nothing: its transaction ended with its connection, and
//     the retry runs at once. No request holds its key longer than
//     Config.AbandonAfter: its handler's context ends then and it rolls back.
//   - a key older than Config.TTL counts as absent; Purge deletes such keys.
//
// Responses are buffered and sent only after they are stored, so a client that
// retries after receiving an answer always gets the replay. Streaming handlers
// (Flush) cannot sit behind the middleware. Changes a handler makes outside
// pgdb.RunInTx are not part of the transaction and commit on their own.
//
// The transaction holds one pool connection for the whole request. A keyed handler
// should do all its database work through pgdb.RunInTx on the request's context:
// one that also takes a second connection from the same pool can, with the pool
// exhausted by keyed requests, wait for a connection that none of them will free
// until AbandonAfter.
//
// The table (Config.Table, default idempotency_keys) has the shape Schema returns.
package idempotency

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/pgdb"
)

// Header names of the protocol.
const (
	// HeaderKey carries the client's idempotency key.
	HeaderKey = "Idempotency-Key"
	// HeaderReplayed is set to "true" on a response replayed from the store.
	HeaderReplayed = "Idempotent-Replayed"
)

// MaxKeyLength is the longest accepted key, in bytes.
const MaxKeyLength = 255

// Defaults of Config.
const (
	DefaultTable        = "idempotency_keys"
	DefaultTTL          = 24 * time.Hour
	DefaultAbandonAfter = time.Minute
	DefaultMaxBodyBytes = 1 << 20
)

// Config configures a Middleware; zero fields take the defaults.
type Config struct {
	// Table is the key table's name (default idempotency_keys).
	Table string
	// TTL is how long a key is remembered (default 24 h); older keys count as absent.
	TTL time.Duration
	// AbandonAfter is the longest a request may hold its key (default 1 min): its
	// handler's context ends then and its transaction rolls back. Set it above the
	// longest handler run, e.g. the server's write timeout.
	AbandonAfter time.Duration
	// MaxBodyBytes bounds the request body that is read and hashed (default 1 MiB);
	// a larger body is refused with 413.
	MaxBodyBytes int64
	// Principal scopes keys to a caller (default auth.Caller: the token's role and
	// name, which survive the token's rotation), so two callers cannot see each
	// other's responses and a retry after a rotation is still a retry.
	Principal func(echo.Context) string
	// Logger receives failures to store or release a key (default: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Table = cmp.Or(c.Table, DefaultTable)
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.AbandonAfter = cmp.Or(c.AbandonAfter, DefaultAbandonAfter)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	if c.Principal == nil {
		c.Principal = auth.Caller
	}
	c.Logger = logging.OrDiscard(c.Logger)
	return c
}

// Validate reports the first invalid field of a defaulted config.
func (c Config) Validate() error {
	switch {
	case !pgdb.ValidIdentifier(c.Table):
		return fmt.Errorf("idempotency: Table %q is not a plain lowercase identifier", c.Table)
	case c.TTL < 0:
		return errors.New("idempotency: TTL must be positive")
	case c.AbandonAfter < 0:
		return errors.New("idempotency: AbandonAfter must be positive")
	case c.MaxBodyBytes < 0:
		return errors.New("idempotency: MaxBodyBytes must be positive")
	}
	return nil
}

// Middleware stores and replays responses of requests that carry an Idempotency-Key.
type Middleware struct {
	cfg   Config
	store store
}

// New returns the middleware over db with cfg's zero fields defaulted.
func New(db bun.IDB, cfg Config) (*Middleware, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Middleware{cfg: cfg, store: store{db: db, table: cfg.Table}}, nil
}

// Handler returns the echo middleware. It acts on POST requests with the header and
// passes every other request through untouched. Mount it after authentication, so
// the principal is known.
func (m *Middleware) Handler() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			values := req.Header.Values(HeaderKey)
			if req.Method != http.MethodPost || len(values) == 0 {
				return next(c)
			}
			key, err := parseKey(values)
			if err != nil {
				return err
			}
			hash, err := hashRequest(c, m.cfg.MaxBodyBytes)
			if err != nil {
				return err
			}
			return m.serve(c, next, keyRef{principal: m.cfg.Principal(c), key: key}, hash)
		}
	}
}
