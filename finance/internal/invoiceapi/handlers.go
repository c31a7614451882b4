package invoiceapi

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/problem"
)

type handlers struct {
	svc *invoice.Service
}

type issueRequest struct {
	CustomerID string        `json:"customer_id"`
	Currency   string        `json:"currency"`
	Lines      []lineRequest `json:"lines"`
	TotalMinor *int64        `json:"total_minor"`
}

type lineRequest struct {
	Description    string `json:"description"`
	Quantity       int64  `json:"quantity"`
	UnitPriceMinor int64  `json:"unit_price_minor"`
}

type paymentRequest struct {
	PaymentID   string `json:"payment_id"`
	AmountMinor int64  `json:"amount_minor"`
}

type refundRequest struct {
	RefundID string `json:"refund_id"`
	Reason   string `json:"reason"`
}

func (h handlers) issue(c echo.Context) error {
	var req issueRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	n := invoice.NewInvoice{CustomerID: req.CustomerID, Currency: req.Currency, TotalMinor: req.TotalMinor}
	if req.Lines != nil {
		n.Lines = make([]invoice.NewLine, len(req.Lines))
		for i, l := range req.Lines {
			n.Lines[i] = invoice.NewLine(l)
		}
	}
	inv, err := h.svc.Issue(c.Request().Context(), n)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, c.Request().URL.Path+"/"+inv.ID.String())
	return c.JSON(http.StatusCreated, newInvoiceJSON(inv))
}

func (h handlers) get(c echo.Context) error {
	id, err := invoiceID(c)
	if err != nil {
		return err
	}
	inv, err := h.svc.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newInvoiceJSON(inv))
}

func (h handlers) list(c echo.Context) error {
	f, err := parseFilter(c.QueryParams())
	if err != nil {
		return err
	}
	page, err := h.svc.List(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := listJSON{Items: make([]invoiceJSON, len(page.Items))}
	for i, inv := range page.Items {
		out.Items[i] = newInvoiceJSON(inv)
	}
	if page.Next > 0 {
		out.NextCursor = encodeCursor(page.Next)
	}
	return c.JSON(http.StatusOK, out)
}

func (h handlers) pay(c echo.Context) error {
	id, err := invoiceID(c)
	if err != nil {
		return err
	}
	var req paymentRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	res, err := h.svc.Pay(c.Request().Context(), id, invoice.NewPayment(req))
	if err != nil {
		return err
	}
	return c.JSON(createdOrReplayed(res.Replayed),
		paymentResultJSON{Invoice: newInvoiceJSON(res.Invoice), Payment: newPaymentJSON(res.Payment)})
}

func (h handlers) refund(c echo.Context) error {
	id, err := invoiceID(c)
	if err != nil {
		return err
	}
	var req refundRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	res, err := h.svc.Refund(c.Request().Context(), id, invoice.NewRefund(req))
	if err != nil {
		return err
	}
	return c.JSON(createdOrReplayed(res.Replayed),
		refundResultJSON{Invoice: newInvoiceJSON(res.Invoice), Refund: newRefundJSON(res.Refund)})
}

// createdOrReplayed is the status of a payment or refund: 201 when it was recorded
// now, 200 when the same one was already recorded and nothing was written.
func createdOrReplayed(replayed bool) int {
	if replayed {
		return http.StatusOK
	}
	return http.StatusCreated
}

func invoiceID(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, problem.Invalid("the invoice id is not a UUID",
			problem.FieldError{Field: "id", Detail: "must be a UUID"})
	}
	return id, nil
}
