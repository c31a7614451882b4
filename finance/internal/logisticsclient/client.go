// Package logisticsclient is finance's client of the logistics ops API: what logistics
// recorded for finance's events (processed keys, their results and receipt times, and
// an invoice's shipment with its history). The invoice trace reads it; so can
// reconciliation, which walks a receipt-time window page by page.
//
// It calls a configured URL through the kit's guarded client (egress.NewClient): every
// address checked by the SSRF guard as it is dialed, a timeout, no redirects followed,
// no proxy from the environment, and a bounded response.
package logisticsclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/logging"
)

// Path is where logistics serves its processed-events record.
const Path = "/v1/ops/processed-events"

// maxResponseBytes bounds a response: a page of 1,000 records fits easily.
const maxResponseBytes = 4 << 20

// ErrNotConfigured means no ops token for logistics is configured.
var ErrNotConfigured = errors.New("logisticsclient: no LOGISTICS_OPS_TOKEN configured")

// StatusError is an answer other than 200 from logistics.
type StatusError struct {
	Status int
	// Type is the problem type logistics sent, if any.
	Type string
}

func (e *StatusError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("logistics answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("logistics answered HTTP %d (%s)", e.Status, e.Type)
}

// Config configures a Client.
type Config struct {
	// BaseURL is the logistics API's root, e.g. http://127.0.0.1:8082.
	BaseURL string
	// Token is a bearer token of role ops valid on logistics; empty disables the client.
	Token string
	// Timeout bounds one call (default 5 s).
	Timeout time.Duration
	// Guard checks every address the client dials (nil: egress's default policy,
	// public destinations on 80 and 443 only). A call to a refused address fails with
	// an *egress.BlockedError in its chain, before any connection.
	Guard *egress.Dialer
}

// Client calls the logistics ops API.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New returns the client of cfg, or an error naming the invalid field.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("logisticsclient: BaseURL %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{base: u, token: cfg.Token, http: egress.NewClient(cfg.Guard, egress.ClientConfig{
		Timeout: cmp.Or(cfg.Timeout, 5*time.Second), IdleConnTimeout: 30 * time.Second,
	})}, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Query selects processed events; zero fields select everything.
type Query struct {
	InvoiceID uuid.UUID
	// From (inclusive) and To (exclusive) bound the receipt time.
	From, To time.Time
	Limit    int
	Cursor   string
}

func (q Query) values() url.Values {
	v := url.Values{}
	if q.InvoiceID != uuid.Nil {
		v.Set("invoice_id", q.InvoiceID.String())
	}
	if !q.From.IsZero() {
		v.Set("from", q.From.UTC().Format(time.RFC3339Nano))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	return v
}

// ProcessedEvents returns one page of logistics' record. It returns ErrNotConfigured
// without a token, a *StatusError for an answer other than 200.
func (c *Client) ProcessedEvents(ctx context.Context, q Query) (Page, error) {
	if c.token == "" {
		return Page{}, ErrNotConfigured
	}
	u := *c.base
	u.Path += Path
	u.RawQuery = q.values().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Page{}, fmt.Errorf("logisticsclient: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if id := logging.CorrelationID(ctx); id != "" {
		req.Header.Set(httpserver.HeaderRequestID, id)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Page{}, fmt.Errorf("logisticsclient: %w", err)
	}
	defer resp.Body.Close()
	body, err := egress.ReadBody(resp.Body, maxResponseBytes)
	if err != nil {
		return Page{}, fmt.Errorf("logisticsclient: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var p struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &p) // the type is a courtesy; the status decides
		return Page{}, &StatusError{Status: resp.StatusCode, Type: p.Type}
	}
	var page Page
	if err := json.Unmarshal(body, &page); err != nil {
		return Page{}, fmt.Errorf("logisticsclient: decode answer: %w", err)
	}
	return page, nil
}
