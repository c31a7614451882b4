// Package opsweb is finance's operations dashboard, served at /ops/: server-rendered
// html/template pages (every value escaped), one embedded stylesheet, no scripts. It
// shows the outbox at a glance (counts, charts of the last hour or day drawn as inline
// SVG, the alerts paged, circuits, the latest reconciliation), the failed events with
// their last error and a Retry button, one event with every attempt, and the trace of
// an invoice across both services. Rows name invoices by number, say which failed
// event holds a pending one back (and then offer no Retry), and give times relative
// to now with the absolute time on hover. A page reloads itself every 30 s only when
// its query asks (refresh=30, a meta refresh). Tables become stacks of cards at phone
// width.
//
// A person signs in with an ops token on /ops/login and gets a session cookie that is
// HttpOnly, SameSite=Strict and holds an HMAC sealed with the token, never the token
// itself (see auth.Tokens.Login). Each request is admitted while the token is still
// configured and the session's record in PostgreSQL lives (see signin), so logout and
// expiry end it on every replica at once; sign-in is throttled per client address and
// for everyone together. The dashboard answers only requests addressed to its own
// host (Config.URL) and takes a POST only from its own origin with, once signed in,
// the session's CSRF token in the form body.
package opsweb

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"handoff/finance/internal/insight"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/signin"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/logging"
)

// Paths of the dashboard; other components (the pager) link to its pages with
// EventPath, TracePath and EventsPath.
const (
	BasePath  = "/ops/"
	LoginPath = "/ops/login"
)

// Role is the token role that may sign in.
const Role = "ops"

// maxFormBytes bounds a form: a token, a CSRF token, a path.
const maxFormBytes = "16K"

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 8 * time.Hour

// EventsPath is the dashboard's list of the events matching query (status, type,
// invoice), e.g. url.Values{"status": {"failed"}}.
func EventsPath(query url.Values) string { return BasePath + "events?" + query.Encode() }

// EventPath is the dashboard page of one outbox event.
func EventPath(id uuid.UUID) string { return BasePath + "events/" + id.String() }

// TracePath is the dashboard page tracing the invoice ref names (id or number).
func TracePath(ref string) string { return BasePath + "invoices/" + url.PathEscape(ref) }

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/style.css
var stylesheet []byte

// pages are the templates, each rendered inside layout.html.
var pages = []string{"login", "overview", "events", "event", "trace", "confirm", "audit", "error"}

// Config holds the dashboard's dependencies; Service, Insight, Tokens and SignIns are
// required.
type Config struct {
	Service *ops.Service
	// Insight reads the charts, the failed events holding others back, invoice
	// numbers and the alerts.
	Insight *insight.Store
	// PendingAge is ALERT_PENDING_AGE, drawn on the oldest-pending chart.
	PendingAge time.Duration
	Tokens     auth.Tokens
	// SignIns holds the sessions and throttles sign-in, shared by every replica.
	SignIns *signin.Store
	// URL is where browsers reach the dashboard (DASHBOARD_URL): only requests for its
	// host are answered, and a POST must come from its origin. "" or a URL naming a
	// loopback or unspecified host (the default http://<HTTP_ADDR>/ops/ on a
	// developer's machine) admits loopback hosts only, on any port.
	URL string
	// SessionTTL is how long a sign-in lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	Log        *slog.Logger
}

// Dashboard serves the pages.
type Dashboard struct {
	cfg   Config
	site  site
	pages map[string]*template.Template
}

// New parses the templates and returns the dashboard of cfg.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Service == nil || cfg.Insight == nil {
		return nil, errors.New("opsweb: Service and Insight are required")
	}
	if cfg.SignIns == nil {
		return nil, errors.New("opsweb: SignIns is required")
	}
	st, err := parseSite(cfg.URL)
	if err != nil {
		return nil, err
	}
	cfg.SessionTTL = cmp.Or(cfg.SessionTTL, DefaultSessionTTL)
	cfg.Log = logging.OrDiscard(cfg.Log)
	d := &Dashboard{cfg: cfg, site: st, pages: map[string]*template.Template{}}
	for _, name := range pages {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("opsweb: parse %s: %w", name, err)
		}
		d.pages[name] = t
	}
	return d, nil
}

// Register mounts the dashboard under /ops on e. Its client addresses (the throttle's
// and the logs') and scheme are e's Context.RealIP and Context.Scheme: configure e's
// trusted proxies (httpserver.Proxies) before serving.
func (d *Dashboard) Register(e *echo.Echo) {
	g := e.Group("/ops", securityHeaders, d.renderErrors, middleware.BodyLimit(maxFormBytes), d.sameOrigin)
	g.GET("", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, BasePath) })
	g.GET("/assets/style.css", serveStylesheet)
	g.GET("/login", d.loginForm)
	g.POST("/login", d.login)

	in := g.Group("", d.requireSession)
	in.POST("/logout", d.logout, checkCSRF)
	in.GET("/", d.overview)
	in.GET("/events", d.events)
	in.GET("/events/:id", d.event)
	in.GET("/events/:id/:action", d.confirmEvent)
	in.POST("/events/:id/:action", d.actOnEvent, checkCSRF)
	in.GET("/bulk/:action", d.confirmBulk)
	in.POST("/bulk/:action", d.actOnMatching, checkCSRF)
	in.GET("/destinations/:action", d.confirmDestination)
	in.POST("/destinations/:action", d.actOnDestination, checkCSRF)
	in.GET("/audit", d.auditLog)
	in.GET("/invoices", d.search)
	in.GET("/invoices/:ref", d.trace)
}

func serveStylesheet(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", stylesheet)
}

// view is what every page template receives.
type view struct {
	Title     string
	Principal string
	CSRF      string
	Notice    string
	// Refresh is the auto-refresh period in seconds (a meta refresh); 0 is off.
	// RefreshURL is this page with auto-refresh toggled.
	Refresh    int
	RefreshURL string
	Data       any
}

// refreshEvery is the auto-refresh period the toggle turns on.
const refreshEvery = 30

// render executes the page into a buffer first, so a template error never sends half
// a page. A GET page whose query asks for auto-refresh (refresh=30) reloads itself
// with a meta refresh, which the Content-Security-Policy allows and which needs no
// script.
func (d *Dashboard) render(c echo.Context, status int, name string, v view) error {
	v.Principal, v.CSRF = principal(c), csrf(c)
	if c.Request().Method == http.MethodGet && status == http.StatusOK {
		q := c.Request().URL.Query()
		// A notice of an action just done is not repeated by the reloads.
		for _, k := range []string{"done", "count", "more"} {
			q.Del(k)
		}
		if q.Get("refresh") == strconv.Itoa(refreshEvery) {
			v.Refresh = refreshEvery
			q.Del("refresh")
		} else {
			q.Set("refresh", strconv.Itoa(refreshEvery))
		}
		v.RefreshURL = (&url.URL{Path: c.Request().URL.Path, RawQuery: q.Encode()}).String()
	}
	var buf bytes.Buffer
	if err := d.pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("opsweb: render %s: %w", name, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}
