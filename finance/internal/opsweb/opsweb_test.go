package opsweb_test

import (
	"bytes"
	"cmp"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/insight"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/opsweb"
	"handoff/finance/internal/signin"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/outbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	opsToken    = "ops-token-0123456789abcdef"
	clerkToken  = "clerk-token-0123456789abc"
	destination = financetest.Destination
)

type bundle struct {
	*financetest.Domain
	srv    *httptest.Server
	client *http.Client
	host   string // the Host of every request, when set
	log    *syncBuffer
}

// options vary a dashboard from the defaults: no DASHBOARD_URL, no trusted proxy, an
// ops and a clerk token.
type options struct {
	url     string
	proxies string
	tokens  string
	host    string
	// reconciliations is the latest reconciliation's source (none when nil).
	reconciliations ops.Reconciliations
}

func setup(t *testing.T) *bundle { return setupWith(t, options{}) }

func setupWith(t *testing.T, opts options) *bundle {
	t.Helper()
	b := &bundle{Domain: financetest.New(t)}
	return b.replica(t, opts)
}

// replica starts another dashboard on b's database, as another finance replica with
// opts would be, with a browser of its own.
func (b *bundle) replica(t *testing.T, opts options) *bundle {
	t.Helper()
	svc := b.Ops(t, ops.Config{Destination: destination, Reconciliations: opts.reconciliations})
	tokens, err := auth.ParseTokens(cmp.Or(opts.tokens, "ops:"+opsToken+",clerk:"+clerkToken), "clerk", "ops")
	require.NoError(t, err)
	signIns, err := signin.New(b.DB, signin.Config{})
	require.NoError(t, err)
	proxies, err := httpserver.ParseProxies(opts.proxies)
	require.NoError(t, err)
	r := *b
	r.log = &syncBuffer{}
	ins, err := insight.New(b.DB)
	require.NoError(t, err)
	dash, err := opsweb.New(opsweb.Config{Service: svc, Insight: ins, PendingAge: 5 * time.Minute,
		Tokens: tokens, SignIns: signIns, URL: opts.url,
		SessionTTL: time.Hour, Log: slog.New(slog.NewJSONHandler(r.log, nil))})
	require.NoError(t, err)
	e := financetest.Echo()
	proxies.Apply(e)
	dash.Register(e)
	r.srv = httptest.NewServer(e)
	t.Cleanup(r.srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	r.client = &http.Client{Jar: jar, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r.host = opts.host
	return &r
}

// syncBuffer collects a dashboard's log lines, written by the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

type page struct {
	status   int
	location string
	header   http.Header
	body     string
}

func (b *bundle) get(t *testing.T, path string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	return b.send(t, req)
}

// post submits a form as a browser on the dashboard's own page would (origin set).
func (b *bundle) post(t *testing.T, path string, form url.Values, origin string) page {
	t.Helper()
	if origin == "" {
		return b.postWith(t, path, form)
	}
	return b.postWith(t, path, form, "Origin", origin)
}

// postWith submits a form with the header pairs given.
func (b *bundle) postWith(t *testing.T, path string, form url.Values, headers ...string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.send(t, req)
}

func (b *bundle) send(t *testing.T, req *http.Request) page {
	t.Helper()
	if b.host != "" {
		req.Host = b.host
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), header: resp.Header, body: string(body)}
}

func (b *bundle) login(t *testing.T) {
	t.Helper()
	p := b.post(t, "/ops/login", url.Values{"token": {opsToken}, "next": {"/ops/"}}, b.srv.URL)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/ops/", p.location)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(t, m, "the page has a CSRF token")
	return m[1]
}

// failed issues an invoice and dead-letters its invoice.issued event with lastError.
func (b *bundle) failed(t *testing.T, lastError string) (invoice.Invoice, uuid.UUID) {
	t.Helper()
	total := int64(500)
	inv, err := b.Invoices.Issue(b.Ctx, invoice.NewInvoice{CustomerID: "cust-1", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	var id uuid.UUID
	err = b.DB.NewRaw(`UPDATE finance_outbox SET delivery_status = 'failed', delivery_attempts = 1, request_count = 1,
		last_error = ?, last_status_code = 400, failed_reason = 'rejected' WHERE aggregate_key = ? RETURNING id`,
		lastError, inv.ID.String()).Scan(b.Ctx, &id)
	require.NoError(t, err)
	return inv, id
}

// blocked is failed's invoice paid as well: its invoice.paid event (paid) waits
// behind the dead-lettered invoice.issued (head).
func (b *bundle) blocked(t *testing.T, lastError string) (inv invoice.Invoice, head, paid uuid.UUID) {
	t.Helper()
	inv, head = b.failed(t, lastError)
	_, err := b.Invoices.Pay(b.Ctx, inv.ID, invoice.NewPayment{PaymentID: "pay-1", AmountMinor: inv.TotalMinor})
	require.NoError(t, err)
	require.NoError(t, b.DB.NewRaw(`SELECT id FROM finance_outbox WHERE aggregate_key = ? AND aggregate_seq = 2`,
		inv.ID.String()).Scan(b.Ctx, &paid))
	return inv, head, paid
}

func TestPagesNeedASession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.get(t, "/ops/")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ops/login?next=%2Fops%2F", p.location)
	p = b.post(t, "/ops/events/"+uuid.NewString()+"/retry", url.Values{}, b.srv.URL)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ops/login", p.location)

	p = b.get(t, "/ops/login")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Equal(t, "DENY", p.header.Get("X-Frame-Options"))
	require.Equal(t, "no-store", p.header.Get("Cache-Control"))
	require.Equal(t, http.StatusOK, b.get(t, "/ops/assets/style.css").status)
}

func TestLoginGivesAHardenedSessionCookie(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.post(t, "/ops/login", url.Values{"token": {opsToken}, "next": {"/ops/events?status=failed"}}, b.srv.URL)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/ops/events?status=failed", p.location)
	cookie := p.header.Get("Set-Cookie")
	require.Contains(t, cookie, "HttpOnly")
	require.Contains(t, cookie, "SameSite=Strict")
	require.Contains(t, cookie, "Path=/ops/")
	require.NotContains(t, cookie, opsToken)
	require.Contains(t, cookie, "Max-Age=3600")
	require.NotContains(t, cookie, "Secure", "served over plain HTTP")
	require.Equal(t, http.StatusOK, b.get(t, "/ops/").status)

	_, err := b.DB.NewRaw(`UPDATE finance_dashboard_sessions SET expires_at = now()`).Exec(b.Ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusSeeOther, b.get(t, "/ops/").status, "the session expired by the database's clock")
}

func TestLoginRefusesBadTokensAndForeignOrigins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, token := range []string{"", "wrong-token-0123456789", clerkToken} {
		p := b.post(t, "/ops/login", url.Values{"token": {token}}, b.srv.URL)
		require.Equal(t, http.StatusUnauthorized, p.status)
		require.Contains(t, p.body, "not an ops token")
		require.Empty(t, p.header.Get("Set-Cookie"))
	}
	for _, origin := range []string{"", "http://evil.example", "null"} {
		p := b.post(t, "/ops/login", url.Values{"token": {opsToken}}, origin)
		require.Equal(t, http.StatusForbidden, p.status, origin)
		require.Empty(t, p.header.Get("Set-Cookie"))
	}
	p := b.post(t, "/ops/login", url.Values{"token": {opsToken}, "next": {"//evil.example/ops/"}}, b.srv.URL)
	require.Equal(t, "/ops/", p.location, "never redirected off the dashboard")
}

func TestRetryFromTheOverview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv, id := b.failed(t, "HTTP 400 rejected")
	b.login(t)

	p := b.get(t, "/ops/")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `id="event-`+id.String()+`"`)
	require.Contains(t, p.body, inv.Number, "the invoice by its number")
	require.Contains(t, p.body, "HTTP 400 rejected")
	retry := "/ops/events/" + id.String() + "/retry"
	require.Contains(t, p.body, `href="`+retry+`"`)

	p = b.get(t, retry)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `id="confirm-form"`, "Retry asks first")
	require.Contains(t, p.body, `action="`+retry+`"`)
	token := csrfOf(t, p.body)
	why := url.Values{"csrf": {token}, "reason": {"logistics fixed the customer, INC-7"}}

	require.Equal(t, http.StatusForbidden, b.post(t, retry, url.Values{"reason": {"x"}}, b.srv.URL).status, "no CSRF token")
	require.Equal(t, http.StatusForbidden, b.post(t, retry, url.Values{"csrf": {"forged"}, "reason": {"x"}}, b.srv.URL).status)
	require.Equal(t, http.StatusForbidden, b.post(t, retry, why, "http://evil.example").status)
	p = b.post(t, retry, url.Values{"csrf": {token}, "reason": {"   "}}, b.srv.URL)
	require.Equal(t, http.StatusBadRequest, p.status, "a reason is required")
	require.Contains(t, p.body, `id="refused"`)
	d, err := b.Outbox.Detail(b.Ctx, b.DB, id)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusFailed, d.Status, "a refused action changes nothing")

	p = b.post(t, retry, why, b.srv.URL)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/ops/events/"+id.String()+"?done=retry", p.location)
	d, err = b.Outbox.Detail(b.Ctx, b.DB, id)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusPending, d.Status)
	require.Zero(t, d.Attempts)

	p = b.get(t, p.location)
	require.Contains(t, p.body, `id="notice"`)
	require.Contains(t, p.body, `id="event-status">pending<`)
	require.Contains(t, p.body, "logistics fixed the customer, INC-7", "the event page shows the audit entry")
	require.Regexp(t, `<td data-label="Who">ops:[0-9a-f]{12}</td>`, p.body, "by the signed-in principal")

	_, err = b.DB.NewRaw(`UPDATE finance_outbox SET delivery_status = 'delivered' WHERE id = ?`, id).Exec(b.Ctx)
	require.NoError(t, err)
	p = b.post(t, retry, why, b.srv.URL)
	require.Equal(t, http.StatusConflict, p.status)
	require.Contains(t, p.body, "Resend sends it again")
}

func TestEverythingShownIsEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, id := b.failed(t, `<script>alert("x")</script>`)
	b.login(t)
	for _, path := range []string{"/ops/", "/ops/events?status=failed", "/ops/events/" + id.String()} {
		p := b.get(t, path)
		require.Equal(t, http.StatusOK, p.status, path)
		require.NotContains(t, p.body, "<script>", path)
		require.Contains(t, p.body, "&lt;script&gt;", path)
	}
	p := b.get(t, "/ops/events?type="+url.QueryEscape(`"><script>x</script>`))
	require.NotContains(t, p.body, "<script>x")
}

func TestSearchAndTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv, id := b.failed(t, "HTTP 400")
	b.login(t)

	p := b.get(t, "/ops/invoices?q="+url.QueryEscape(" "+inv.Number+" "))
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ops/invoices/"+inv.Number, p.location)
	p = b.get(t, p.location)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Invoice "+inv.Number)
	require.Contains(t, p.body, `id="trace-`+id.String()+`"`)
	require.Contains(t, p.body, "logistics record unavailable")

	require.Equal(t, http.StatusOK, b.get(t, "/ops/invoices/"+strings.TrimPrefix(inv.Number, "INV-")).status)
	require.Equal(t, http.StatusOK, b.get(t, "/ops/events?invoice="+inv.Number).status)
	nf := b.get(t, "/ops/invoices/INV-424242")
	require.Equal(t, http.StatusNotFound, nf.status)
	require.Contains(t, nf.body, "No invoice has this id or number")
	require.Equal(t, http.StatusBadRequest, b.get(t, "/ops/invoices/banana").status)
	require.Equal(t, http.StatusNotFound, b.get(t, "/ops/events/"+uuid.NewString()).status)
	require.Equal(t, http.StatusBadRequest, b.get(t, "/ops/events?cursor=nope").status)
}

func TestPathsForLinks(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	require.Equal(t, "/ops/events/"+id.String(), opsweb.EventPath(id))
	require.Equal(t, "/ops/invoices/INV-000042", opsweb.TracePath("INV-000042"))
	require.Equal(t, "/ops/invoices/a%2Fb", opsweb.TracePath("a/b"))
}

func TestOversizedFormsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.post(t, "/ops/login", url.Values{"token": {strings.Repeat("x", 32<<10)}}, b.srv.URL)
	require.Equal(t, http.StatusRequestEntityTooLarge, p.status)
}
