// Package httpserver builds the echo servers of the services with the same hardening:
// server timeouts against slow clients, a correlation id on every request, problem+json
// errors, recovery from panics, access logs, forwarding headers believed only from
// trusted proxies, /healthz and /readyz, and (WithTracing) a span per request.
package httpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/problem"
)

// HeaderRequestID carries the correlation id between clients and services.
const HeaderRequestID = "X-Request-ID"

// New returns an echo instance with the common middleware and error handler. It
// trusts no proxy (see Proxies.Apply): the client's address and scheme are the
// connection's, whatever forwarding headers say.
func New(log *slog.Logger, opts ...Option) *echo.Echo {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	Proxies{}.Apply(e)
	e.HTTPErrorHandler = problem.Handler(log)
	if o.tracer != nil {
		e.Use(traced(o.tracer))
	}
	e.Use(correlation, middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.ErrorContext(c.Request().Context(), "panic", "err", err, "stack", string(stack))
			return err
		},
	}), accessLog(log))
	return e
}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// ValidRequestID reports whether id is taken as a correlation id (an X-Request-ID, or
// a batch item's correlation_id): 1 to 128 of A-Z a-z 0-9 . _ : -.
func ValidRequestID(id string) bool { return validRequestID.MatchString(id) }

// correlation takes the caller's X-Request-ID (or makes one), echoes it back and puts
// it in the request context for logs and outbox rows.
func correlation(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(HeaderRequestID)
		if !validRequestID.MatchString(id) {
			id = NewID()
		}
		c.Response().Header().Set(HeaderRequestID, id)
		ctx := logging.WithCorrelationID(c.Request().Context(), id)
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			req := c.Request()
			if isProbe(c.Path()) {
				return nil
			}
			log.InfoContext(req.Context(), "http request", "method", req.Method, "path", c.Path(),
				"status", c.Response().Status, "duration_ms", float64(time.Since(start).Microseconds())/1000)
			return nil
		}
	}
}

// NewID returns a random 16-byte hex id.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Timeouts bound how long a client may take; zero fields get the defaults.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// Serve listens on addr and serves h until ctx ends, then shuts down gracefully within
// grace. It returns nil after a clean shutdown.
func Serve(ctx context.Context, addr string, h http.Handler, t Timeouts, grace time.Duration, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	return ServeListener(ctx, ln, h, t, grace, log)
}

// ServeListener is Serve on an existing listener.
func ServeListener(ctx context.Context, ln net.Listener, h http.Handler, t Timeouts, grace time.Duration, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmpOr(t.ReadHeader, 5*time.Second),
		ReadTimeout:       cmpOr(t.Read, 15*time.Second),
		WriteTimeout:      cmpOr(t.Write, 30*time.Second),
		IdleTimeout:       cmpOr(t.Idle, 90*time.Second),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("http server listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return errors.Join(fmt.Errorf("http shutdown: %w", err), srv.Close())
	}
	return nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
