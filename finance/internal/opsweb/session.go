package opsweb

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
)

// cookieName holds the session; its value is auth.Tokens' sealed session, never a token.
const cookieName = "handoff_ops_session"

const (
	principalKey = "opsweb.principal"
	csrfKey      = "opsweb.csrf"
	originKey    = "opsweb.origin"
	csrfField    = "csrf"
)

// setSession gives the browser the session cookie: HttpOnly (scripts cannot read it),
// SameSite=Strict (no other site's page sends it), scoped to the dashboard, Secure
// when the dashboard is served over TLS. Its lifetime is a hint to the browser; the
// session's record decides.
func (d *Dashboard) setSession(c echo.Context, value string) {
	c.SetCookie(&http.Cookie{
		Name: cookieName, Value: value, Path: BasePath, MaxAge: int(d.cfg.SessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(c),
	})
}

func (d *Dashboard) clearSession(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: cookieName, Value: "", Path: BasePath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(c)})
}

// requireSession admits a request whose session was made with a token configured now
// and whose record lives (one primary-key lookup), and remembers its principal and
// CSRF token; anyone else is sent to the login form, coming back here afterwards.
func (d *Dashboard) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if ck, err := c.Cookie(cookieName); err == nil {
			if principal, ok := d.cfg.Tokens.Session(ck.Value, Role); ok {
				live, err := d.cfg.SignIns.Active(c.Request().Context(), ck.Value)
				if err != nil {
					return err
				}
				if live {
					c.Set(principalKey, principal)
					c.Set(csrfKey, csrfToken(ck.Value))
					return next(c)
				}
			}
		}
		target := LoginPath
		if c.Request().Method == http.MethodGet {
			target += "?next=" + url.QueryEscape(c.Request().URL.RequestURI())
		}
		return c.Redirect(http.StatusSeeOther, target)
	}
}

// csrfToken is the form token of a session: an HMAC keyed by the session value, which
// only the browser holding the HttpOnly cookie and the server know.
func csrfToken(session string) string {
	h := hmac.New(sha256.New, []byte(session))
	h.Write([]byte("handoff/opsweb/csrf/v1"))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// checkCSRF refuses a state-changing request whose form token is not the session's.
// The token is read from the form body only: one in the URL would sit in logs,
// history and Referer headers.
func checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		want, _ := c.Get(csrfKey).(string)
		got := formValue(c, csrfField)
		if want == "" || !hmac.Equal([]byte(got), []byte(want)) {
			return errForbidden
		}
		return next(c)
	}
}

// formValue is a field of the request's form body, never of its URL query.
func formValue(c echo.Context, name string) string {
	return c.Request().PostFormValue(name)
}

// safeNext returns where to go after logging in: a dashboard page, never elsewhere,
// and never an action's confirmation page, which a link from outside could word.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, BasePath) ||
		strings.HasPrefix(next, "//") || strings.Contains(next, "\\") || confirmation.MatchString(u.Path) {
		return BasePath
	}
	return u.RequestURI()
}

// confirmation matches the paths of the actions' confirmation pages.
var confirmation = regexp.MustCompile(`^/ops/(bulk/|destinations/|events/[^/]+/)`)

// principal returns the signed-in principal of the request.
func principal(c echo.Context) string {
	p, _ := c.Get(principalKey).(string)
	return p
}

// csrf returns the form token of the request's session.
func csrf(c echo.Context) string {
	t, _ := c.Get(csrfKey).(string)
	return t
}

// securityHeaders keeps the dashboard's pages to themselves: no framing, no foreign
// scripts or styles, no caching of operational data.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		return next(c)
	}
}
