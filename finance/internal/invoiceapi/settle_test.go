package invoiceapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/problem"
)

type paymentOut struct {
	Invoice invoiceOut `json:"invoice"`
	Payment struct {
		PaymentID   string `json:"payment_id"`
		InvoiceID   string `json:"invoice_id"`
		AmountMinor int64  `json:"amount_minor"`
		CreatedAt   string `json:"created_at"`
	} `json:"payment"`
}

type refundOut struct {
	Invoice invoiceOut `json:"invoice"`
	Refund  struct {
		RefundID    string `json:"refund_id"`
		InvoiceID   string `json:"invoice_id"`
		AmountMinor int64  `json:"amount_minor"`
		Reason      string `json:"reason"`
		CreatedAt   string `json:"created_at"`
	} `json:"refund"`
}

func TestPartialThenFullPayment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t, "cust-42", 12000)

	rec := b.pay(t, inv.ID, "pay-1", 5000)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	partial := decode[paymentOut](t, rec.Body)
	require.Equal(t, "partially_paid", partial.Invoice.Status)
	require.EqualValues(t, 5000, partial.Invoice.PaidMinor)
	require.Equal(t, "pay-1", partial.Payment.PaymentID)
	require.Equal(t, inv.ID, partial.Payment.InvoiceID)
	require.EqualValues(t, 5000, partial.Payment.AmountMinor)
	require.NotEmpty(t, partial.Payment.CreatedAt)
	require.Len(t, b.outbox(t, inv.ID), 1, "a partial payment emits nothing")

	rec = b.pay(t, inv.ID, "pay-2", 7000)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	full := decode[paymentOut](t, rec.Body)
	require.Equal(t, "paid", full.Invoice.Status)
	require.EqualValues(t, 12000, full.Invoice.PaidMinor)

	rows := b.outbox(t, inv.ID)
	require.Len(t, rows, 2)
	paid := rows[1]
	require.Equal(t, invoice.EventPaid, paid.EventType)
	require.Equal(t, "invoice.paid:"+inv.ID+":pay-2", paid.IdempotencyKey)
	require.Equal(t, inv.ID, paid.AggregateKey)
	require.EqualValues(t, 2, paid.AggregateSeq)
	require.Equal(t, destination, paid.Destination)
	require.JSONEq(t, fmt.Sprintf(`{"invoice_id":%q,"invoice_number":%q,"customer_id":"cust-42","currency":"EUR",
		"total_minor":12000,"paid_minor":12000,"status":"paid","payment_id":"pay-2","amount_minor":7000}`,
		inv.ID, inv.Number), string(paid.Payload))
}

func TestPayingAPaidInvoiceIs409AndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t, "cust-42", 12000)
	require.Equal(t, http.StatusCreated, b.pay(t, inv.ID, "pay-1", 12000).Code)
	before := b.counts(t)

	requireProblem(t, b.pay(t, inv.ID, "pay-2", 1), http.StatusConflict, "invoice-already-paid")
	requireProblem(t, b.pay(t, inv.ID, "pay-1", 1), http.StatusConflict, "payment-exists")
	require.Equal(t, before, b.counts(t))
}

// The same payment_id with the same invoice and amount, or the same refund_id with
// the same invoice, is the fact already recorded: 200 with the 201's body, nothing
// written, also when the invoice is already paid or refunded by it, and also under
// an Idempotency-Key of its own (the service then runs in the key's transaction).
func TestRecordedPaymentOrRefundAgainIs200(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"without a key":             nil,
		"under a new key each time": {idempotency.HeaderKey, "again"},
	}
	for name, header := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			inv := b.issue(t, "cust-42", 12000)
			payments, refunds := "/v1/invoices/"+inv.ID+"/payments", "/v1/invoices/"+inv.ID+"/refunds"

			partial := b.pay(t, inv.ID, "pay-1", 5000)
			require.Equal(t, http.StatusCreated, partial.Code, partial.Body.String())
			settling := b.pay(t, inv.ID, "pay-2", 7000)
			require.Equal(t, http.StatusCreated, settling.Code, settling.Body.String())
			before := b.counts(t)

			again := b.do(t, http.MethodPost, payments, `{"payment_id":"pay-2","amount_minor":7000}`, header...)
			require.Equal(t, http.StatusOK, again.Code, again.Body.String())
			require.JSONEq(t, settling.Body.String(), again.Body.String())
			again = b.do(t, http.MethodPost, payments, `{"payment_id":"pay-1","amount_minor":5000}`, appendKey(header, "-1")...)
			require.Equal(t, http.StatusOK, again.Code, again.Body.String())
			out := decode[paymentOut](t, again.Body)
			require.Equal(t, decode[paymentOut](t, partial.Body).Payment, out.Payment, "the payment as recorded")
			require.Equal(t, "paid", out.Invoice.Status, "the invoice as it stands")
			require.Equal(t, before, b.counts(t))

			refunded := b.refund(t, inv.ID, "ref-1")
			require.Equal(t, http.StatusCreated, refunded.Code, refunded.Body.String())
			before = b.counts(t)
			again = b.do(t, http.MethodPost, refunds, `{"refund_id":"ref-1","reason":"retyped"}`, appendKey(header, "-2")...)
			require.Equal(t, http.StatusOK, again.Code, again.Body.String())
			require.JSONEq(t, refunded.Body.String(), again.Body.String(), "the refund as recorded, with its reason")
			require.Equal(t, before, b.counts(t))
		})
	}
}

// appendKey makes the Idempotency-Key of header, if any, a new one.
func appendKey(header []string, suffix string) []string {
	if header == nil {
		return nil
	}
	return []string{header[0], header[1] + suffix}
}

func TestPaymentRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t, "cust-42", 12000)
	other := b.issue(t, "cust-7", 100)
	require.Equal(t, http.StatusCreated, b.pay(t, inv.ID, "pay-1", 2000).Code)
	before := b.counts(t)

	requireProblem(t, b.pay(t, inv.ID, "pay-2", 10001), http.StatusUnprocessableEntity, "amount-exceeds-balance")
	requireProblem(t, b.pay(t, inv.ID, "pay-1", 3000), http.StatusConflict, "payment-exists")
	requireProblem(t, b.pay(t, other.ID, "pay-1", 100), http.StatusConflict, "payment-exists")
	requireProblem(t, b.pay(t, uuid.NewString(), "pay-3", 1), http.StatusNotFound, "invoice-not-found")
	requireProblem(t, b.pay(t, "nope", "pay-3", 1), http.StatusBadRequest, "validation-failed")
	requireProblem(t, b.pay(t, inv.ID, "pay-3", 0), http.StatusBadRequest, "validation-failed")
	requireProblem(t, b.pay(t, inv.ID, "", 1), http.StatusBadRequest, "validation-failed")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/invoices/"+inv.ID+"/payments",
		`{"payment_id":"pay-3","amount_minor":10.5}`), http.StatusBadRequest, "validation-failed")
	require.Equal(t, before, b.counts(t))
}

// TestConcurrentFullPaymentsSettleOnce sends 24 full payments of one invoice at the
// same instant, each on its own HTTP connection, racing for the pool's database
// connections: with 24 different payment ids (one is recorded, the others find the
// invoice paid), and as 24 copies of one payment (one is recorded, the others find it
// recorded).
func TestConcurrentFullPaymentsSettleOnce(t *testing.T) {
	t.Parallel()
	const n = 24
	tests := map[string]struct {
		paymentID func(i int) string
		want      map[string]int
	}{
		"different payments": {func(i int) string { return fmt.Sprintf("pay-%d", i) },
			map[string]int{"201": 1, "409 invoice-already-paid": n - 1}},
		"identical payments": {func(int) string { return "pay-1" }, map[string]int{"201": 1, "200": n - 1}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			inv := b.issue(t, "cust-42", 12000)
			srv := httptest.NewServer(b.e)
			t.Cleanup(srv.Close)

			answers := payConcurrently(t, srv.URL+"/v1/invoices/"+inv.ID+"/payments", n, tt.paymentID)
			require.Equal(t, tt.want, answers)
			require.Equal(t, 1, b.counts(t).Payments)
			paid := 0
			for _, row := range b.outbox(t, inv.ID) {
				if row.EventType == invoice.EventPaid {
					paid++
				}
			}
			require.Equal(t, 1, paid)
		})
	}
}

// payConcurrently releases n payments of 12000 at once, each from its own client
// connection, and counts the answers by status and problem slug.
func payConcurrently(t *testing.T, url string, n int, paymentID func(i int) string) map[string]int {
	t.Helper()
	start := make(chan struct{})
	answers := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		body := fmt.Sprintf(`{"payment_id":%q,"amount_minor":12000}`, paymentID(i))
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+clerkToken)
		req.Header.Set("Content-Type", "application/json")
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			<-start
			answers <- send(client, req)
		})
	}
	close(start)
	wg.Wait()
	close(answers)
	counted := map[string]int{}
	for a := range answers {
		counted[a]++
	}
	return counted
}

// send returns "<status>" or "<status> <problem slug>", or the transport error.
func send(client *http.Client, req *http.Request) string {
	res, err := client.Do(req)
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	var p problem.Problem
	_ = json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(&p)
	if p.Type == "" {
		return strconv.Itoa(res.StatusCode)
	}
	return strconv.Itoa(res.StatusCode) + " " + strings.TrimPrefix(p.Type, problem.TypeBase)
}

func TestRefundRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t, "cust-42", 12000)

	requireProblem(t, b.refund(t, inv.ID, "ref-1"), http.StatusConflict, "invoice-not-paid")
	require.Equal(t, http.StatusCreated, b.pay(t, inv.ID, "pay-1", 4000).Code)
	requireProblem(t, b.refund(t, inv.ID, "ref-1"), http.StatusConflict, "invoice-not-paid")
	require.Equal(t, http.StatusCreated, b.pay(t, inv.ID, "pay-2", 8000).Code)

	rec := b.refund(t, inv.ID, "ref-1")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	out := decode[refundOut](t, rec.Body)
	require.Equal(t, "refunded", out.Invoice.Status)
	require.Equal(t, "ref-1", out.Refund.RefundID)
	require.Equal(t, inv.ID, out.Refund.InvoiceID)
	require.EqualValues(t, 12000, out.Refund.AmountMinor)
	require.Equal(t, "damaged", out.Refund.Reason)

	rows := b.outbox(t, inv.ID)
	require.Len(t, rows, 3)
	require.Equal(t, []string{invoice.EventIssued, invoice.EventPaid, invoice.EventRefunded},
		[]string{rows[0].EventType, rows[1].EventType, rows[2].EventType})
	refunded := rows[2]
	require.Equal(t, "invoice.refunded:"+inv.ID+":ref-1", refunded.IdempotencyKey)
	require.EqualValues(t, 3, refunded.AggregateSeq)
	require.JSONEq(t, fmt.Sprintf(`{"invoice_id":%q,"invoice_number":%q,"customer_id":"cust-42","currency":"EUR",
		"total_minor":12000,"paid_minor":12000,"status":"refunded","refund_id":"ref-1","amount_minor":12000}`,
		inv.ID, inv.Number), string(refunded.Payload))

	before := b.counts(t)
	requireProblem(t, b.refund(t, inv.ID, "ref-2"), http.StatusConflict, "invoice-already-refunded")
	requireProblem(t, b.pay(t, inv.ID, "pay-3", 1), http.StatusConflict, "invoice-already-paid")
	second := b.issue(t, "cust-42", 50)
	require.Equal(t, http.StatusCreated, b.pay(t, second.ID, "pay-4", 50).Code)
	before.Invoices, before.Payments, before.Outbox = before.Invoices+1, before.Payments+1, before.Outbox+2
	requireProblem(t, b.refund(t, second.ID, "ref-1"), http.StatusConflict, "refund-exists")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/invoices/"+second.ID+"/refunds",
		`{"refund_id":"ref-9","reason":"bad\u0000"}`), http.StatusBadRequest, "validation-failed")
	require.Equal(t, before, b.counts(t))
}
