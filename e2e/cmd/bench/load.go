package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"handoff/e2e/harness"
)

// api drives finance's invoice API as clerks do, over kept-alive connections.
type api struct {
	base   string
	client *http.Client
}

func newAPI(base string) *api {
	return &api{base: base, client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute},
	}}
}

// issueBody is the invoice every clerk issues: 120.00 EUR.
var issueBody = []byte(`{"customer_id":"bench","currency":"EUR",` +
	`"lines":[{"description":"Pallet","quantity":2,"unit_price_minor":6000}]}`)

// issueAndPay issues an invoice and pays it in full with paymentID; it returns the
// invoice's id.
func (a *api) issueAndPay(ctx context.Context, paymentID string) (string, error) {
	var inv struct {
		ID         string `json:"id"`
		TotalMinor int64  `json:"total_minor"`
	}
	if err := a.post(ctx, "/v1/invoices", issueBody, &inv); err != nil {
		return "", fmt.Errorf("issue: %w", err)
	}
	pay, err := json.Marshal(map[string]any{"payment_id": paymentID, "amount_minor": inv.TotalMinor})
	if err != nil {
		return "", err
	}
	if err := a.post(ctx, "/v1/invoices/"+inv.ID+"/payments", pay, nil); err != nil {
		return "", fmt.Errorf("pay: %w", err)
	}
	return inv.ID, nil
}

// post sends body and decodes a 201 answer into out (when not nil).
func (a *api) post(ctx context.Context, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+harness.ClerkToken)
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%s: %d %s", path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// tally counts a load's paid invoices and failures; it is safe for concurrent use.
type tally struct {
	mu       sync.Mutex
	invoices []string
	failures int64
	firstErr error
	paid     atomic.Int64
}

func (t *tally) record(invoice string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failures++
		if t.firstErr == nil {
			t.firstErr = err
		}
		return
	}
	t.paid.Add(1)
	t.invoices = append(t.invoices, invoice)
}

// err reports a load in which more than one request in a hundred failed.
func (t *tally) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failures*100 > int64(len(t.invoices))+t.failures {
		return fmt.Errorf("%d of %d invoices failed, first: %w", t.failures, int64(len(t.invoices))+t.failures, t.firstErr)
	}
	return nil
}

// closedLoop runs clerks that each issue and pay one invoice after another until
// limit invoices have been started or the deadline has passed; an invoice started
// before the deadline is finished, so the services see no cancelled requests. Payment
// ids are prefix-<n>.
func closedLoop(ctx context.Context, a *api, clerks int, limit int64, deadline time.Time, prefix string) *tally {
	t := &tally{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clerks {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				n := next.Add(1)
				if n > limit {
					return
				}
				inv, err := a.issueAndPay(ctx, fmt.Sprintf("%s-%d", prefix, n))
				t.record(inv, err)
				if err != nil {
					pause(ctx, 10*time.Millisecond) // a failing service is not hammered
				}
			}
		})
	}
	wg.Wait()
	return t
}

// openLoop starts an issue-and-pay at a constant rate per second for d, whatever
// the answers' speed (up to maxInFlight at once; arrivals beyond it are counted as
// shed), and waits for the started ones to finish.
func openLoop(ctx context.Context, a *api, perSec float64, d time.Duration, prefix string) (*tally, int64) {
	const maxInFlight = 512
	t := &tally{}
	slots := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	var shed int64
	start := time.Now()
	total := int64(math.Floor(perSec * d.Seconds()))
	for i := range total {
		pause(ctx, time.Until(start.Add(time.Duration(float64(i)/perSec*float64(time.Second)))))
		if ctx.Err() != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		default:
			shed++
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			inv, err := a.issueAndPay(ctx, fmt.Sprintf("%s-%d", prefix, i))
			t.record(inv, err)
		})
	}
	wg.Wait()
	return t, shed
}

// pause sleeps for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}
