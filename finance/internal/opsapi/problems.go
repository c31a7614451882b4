package opsapi

import (
	"errors"
	"net/http"

	"handoff/finance/internal/invoice"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/problem"
)

// domainProblems maps each domain error to its answer. The slugs are the API's
// stable contract; clients switch on them.
var domainProblems = problem.Table{
	problem.When(outbox.ErrNotFound, http.StatusNotFound, "event-not-found", "no outbox event has this id"),
	problem.When(outbox.ErrDelivered, http.StatusConflict, "event-delivered", "the event is delivered; resend it to send it again"),
	problem.When(outbox.ErrInFlight, http.StatusConflict, "event-in-flight", "a dispatcher is sending the event right now; look again in a moment"),
	problem.When(outbox.ErrSkipped, http.StatusConflict, "event-skipped", "an operator skipped the event; it is never sent again"),
	problem.When(outbox.ErrNotDeadLetter, http.StatusConflict, "event-not-dead-letter", "only a dead letter (status failed) is skipped"),
	problem.When(outbox.ErrNotDelivered, http.StatusConflict, "event-not-delivered", "only a delivered event is resent; retry a failed or pending one"),
	problem.When(ops.ErrPaused, http.StatusConflict, "destination-paused", "the destination is paused already"),
	problem.When(ops.ErrNotPaused, http.StatusConflict, "destination-not-paused", "the destination is not paused"),
	problem.When(invoice.ErrNotFound, http.StatusNotFound, "invoice-not-found", "no invoice has this id or number"),
}

// problemFor turns the errors a handler returns into problems, in this one place;
// errors it does not know stay as they are and become a logged 500.
func problemFor(err error) error {
	var fe *outbox.FilterError
	if errors.As(err, &fe) {
		return problem.Invalid("the request is not valid", problem.FieldError{Field: fe.Field, Detail: fe.Detail})
	}
	var bad *ops.ValidationError
	if errors.As(err, &bad) {
		return problem.Invalid("the request is not valid", problem.FieldError{Field: bad.Field, Detail: bad.Detail})
	}
	var invalid *invoice.ValidationError
	if errors.As(err, &invalid) {
		return problem.InvalidFields("the request is not valid", invalid.Fields)
	}
	return domainProblems.Map(err)
}
