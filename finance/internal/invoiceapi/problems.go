package invoiceapi

import (
	"errors"
	"net/http"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/problem"
)

// domainProblems maps each domain error to its answer. The slugs are the API's
// stable contract; clients switch on them.
var domainProblems = problem.Table{
	problem.When(invoice.ErrNotFound, http.StatusNotFound, "invoice-not-found", "no invoice has this id"),
	problem.When(invoice.ErrAlreadyPaid, http.StatusConflict, "invoice-already-paid", "the invoice is already paid or refunded; nothing was recorded"),
	problem.When(invoice.ErrAmountExceedsBalance, http.StatusUnprocessableEntity, "amount-exceeds-balance", "the amount exceeds what remains to be paid on the invoice"),
	problem.When(invoice.ErrPaymentExists, http.StatusConflict, "payment-exists", "a payment with this payment_id is already recorded for another invoice or another amount"),
	problem.When(invoice.ErrNotPaid, http.StatusConflict, "invoice-not-paid", "only a paid invoice can be refunded"),
	problem.When(invoice.ErrAlreadyRefunded, http.StatusConflict, "invoice-already-refunded", "the invoice is already refunded"),
	problem.When(invoice.ErrRefundExists, http.StatusConflict, "refund-exists", "a refund with this refund_id is already recorded for another invoice"),
}

// problemFor turns the errors a handler returns into problems, in this one place;
// errors it does not know stay as they are and become a logged 500.
func problemFor(err error) error {
	var invalid *invoice.ValidationError
	if errors.As(err, &invalid) {
		return problem.InvalidFields("the request is not valid", invalid.Fields)
	}
	return domainProblems.Map(err)
}
