package invoice

import (
	"errors"
	"strings"
)

// Errors that decide the answer to a caller. When one of them is returned, nothing
// was written.
var (
	// ErrNotFound: no invoice has the id.
	ErrNotFound = errors.New("invoice not found")
	// ErrAlreadyPaid: a payment for an invoice that is paid or refunded.
	ErrAlreadyPaid = errors.New("invoice is already paid")
	// ErrAmountExceedsBalance: a payment larger than what remains to be paid.
	ErrAmountExceedsBalance = errors.New("payment amount exceeds the invoice balance")
	// ErrPaymentExists: the payment id is already recorded for another invoice or
	// another amount.
	ErrPaymentExists = errors.New("payment id already exists")
	// ErrNotPaid: a refund for an invoice that is not paid.
	ErrNotPaid = errors.New("invoice is not paid")
	// ErrAlreadyRefunded: a refund for an invoice that is already refunded.
	ErrAlreadyRefunded = errors.New("invoice is already refunded")
	// ErrRefundExists: the refund id is already recorded for another invoice.
	ErrRefundExists = errors.New("refund id already exists")
)

// FieldError names one invalid field of an input.
type FieldError struct {
	// Field is the input's JSON name, with a path for nested values ("lines[2].quantity").
	Field  string
	Detail string
}

// ValidationError lists every invalid field of an input; nothing was written.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Detail
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// fieldErrors collects the invalid fields of one input.
type fieldErrors []FieldError

func (fe *fieldErrors) add(field, detail string) {
	*fe = append(*fe, FieldError{Field: field, Detail: detail})
}

// check adds field with err's text (a package wire check's), unless err is nil.
func (fe *fieldErrors) check(field string, err error) {
	if err != nil {
		fe.add(field, err.Error())
	}
}

// err returns a *ValidationError, or nil when every field was valid.
func (fe fieldErrors) err() error {
	if len(fe) == 0 {
		return nil
	}
	return &ValidationError{Fields: fe}
}
