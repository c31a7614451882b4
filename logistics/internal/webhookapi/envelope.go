package webhookapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
	"handoff/pkg/integrationkit/wire"

	"handoff/logistics/internal/shipment"
)

// envelope is finance's event envelope; data is kept raw for the payload hash.
type envelope struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	OccurredAt string          `json:"occurred_at"`
	Sequence   *int64          `json:"sequence"`
	Data       json.RawMessage `json:"data"`
}

// eventData is the part of an invoice event's data that logistics checks or uses.
type eventData struct {
	InvoiceID     string `json:"invoice_id"`
	InvoiceNumber string `json:"invoice_number"`
	CustomerID    string `json:"customer_id"`
	Currency      string `json:"currency"`
	TotalMinor    *int64 `json:"total_minor"`
	PaymentID     string `json:"payment_id"`
	RefundID      string `json:"refund_id"`
}

// event is a validated envelope with the hash that identifies its content.
type event struct {
	ID uuid.UUID
	// Hash covers the business fact: type, sequence and data (which holds the
	// invoice), not the envelope's id or occurred_at, which a finance restored from a
	// backup re-creates when it emits the same fact again under the same key.
	Hash []byte
	// PriorHash covers the whole envelope, id and occurred_at included: the form of
	// the hash stored before Hash, compared with the records of that time.
	PriorHash []byte
	// correlationID is a batch item's correlation id, for its log lines.
	correlationID string
	shipment.Event
}

const slugMalformed = "malformed-event"

// extensible decodes finance's documents: members finance may add are admitted, a
// member matching a field only case-insensitively is not.
var extensible = strict.Decoder{AllowUnknown: true}

// parseEvent validates body as an invoice event envelope. Any error is a 400
// problem: the body is not valid UTF-8, holds a NUL (raw or escaped), is not exactly
// one JSON object, names a member twice at any depth, nests deeper than
// strict.MaxDepth, names a member that matches a field only case-insensitively, or
// misses or mistypes a field. The hashes are of canonical forms, so transport details
// (headers, attempt numbers, whitespace, key order) never make a retry look like a
// different request; see event for what each covers.
func parseEvent(body []byte) (event, error) {
	root, err := decodeTree(body)
	if err != nil {
		return event{}, problem.New(http.StatusBadRequest, slugMalformed, err.Error())
	}
	// The tree has passed every check but the names of the members bound to fields,
	// which DecodeObject reads from it rather than walking the body again.
	var env envelope
	if err := extensible.DecodeObject(body, root, &env); err != nil {
		return event{}, typeProblem("", err)
	}
	var data eventData
	if members, ok := root["data"].(map[string]any); ok && isObject(env.Data) {
		if err := extensible.DecodeObject(env.Data, members, &data); err != nil {
			return event{}, typeProblem("data.", err)
		}
	}
	ev, fields := validate(env, data)
	if len(fields) > 0 {
		return event{}, problem.Invalid("the event is invalid", fields...)
	}
	fact := map[string]any{"type": root["type"], "sequence": root["sequence"], "data": root["data"]}
	if ev.Hash, err = inbox.HashDecoded(fact); err != nil {
		return event{}, fmt.Errorf("hash event: %w", err)
	}
	fact["id"], fact["occurred_at"] = root["id"], root["occurred_at"]
	if ev.PriorHash, err = inbox.HashDecoded(fact); err != nil {
		return event{}, fmt.Errorf("hash event: %w", err)
	}
	return ev, nil
}

// decodeTree parses body as exactly one JSON object, each member named once and nested
// at most strict.MaxDepth deep, whose strings and keys hold no NUL.
func decodeTree(body []byte) (map[string]any, error) {
	if !utf8.Valid(body) {
		return nil, errors.New("the body is not valid UTF-8")
	}
	if bytes.IndexByte(body, 0) >= 0 {
		return nil, errors.New("the body contains a NUL byte")
	}
	var root map[string]any
	err := strict.Decoder{UseNumber: true}.Decode(body, &root)
	var refused *strict.Error
	switch {
	case errors.As(err, &refused):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("the body is not a JSON object: %w", err)
	}
	if root == nil {
		return nil, errors.New("the body is not a JSON object")
	}
	if hasNUL(root) {
		return nil, errors.New(`the event contains a NUL character (\u0000)`)
	}
	return root, nil
}

func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0) >= 0
	case []any:
		for _, e := range v {
			if hasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 || hasNUL(e) {
				return true
			}
		}
	}
	return false
}

// typeProblem reports a field of the wrong JSON type or a member in the wrong case;
// prefix names the enclosing object.
func typeProblem(prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return problem.Invalid("the event is invalid",
			problem.FieldError{Field: prefix + te.Field, Detail: "must not be a JSON " + te.Value})
	}
	var refused *strict.Error
	if errors.As(err, &refused) {
		placed := *refused
		placed.Path = strings.TrimSuffix(prefix+refused.Path, ".")
		err = &placed
	}
	return problem.New(http.StatusBadRequest, slugMalformed, err.Error())
}

func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

// validate checks the envelope and its data. The values finance takes from its
// callers are checked with package wire's rules, which finance applies to that input,
// so an event of input finance accepted is never refused here.
func validate(env envelope, data eventData) (event, []problem.FieldError) {
	var v validator
	ev := event{
		ID: v.uuid("id", env.ID),
		Event: shipment.Event{
			Type:          shipment.EventType(env.Type),
			InvoiceID:     v.uuid("data.invoice_id", data.InvoiceID),
			InvoiceNumber: v.check("data.invoice_number", data.InvoiceNumber, true, wire.CheckID),
			CustomerID:    v.check("data.customer_id", data.CustomerID, true, wire.CheckID),
		},
	}
	if !ev.Type.Valid() {
		v.fail("type", "must be one of invoice.issued, invoice.paid, invoice.refunded")
	}
	if _, err := time.Parse(time.RFC3339, env.OccurredAt); err != nil {
		v.fail("occurred_at", "must be an RFC 3339 timestamp")
	}
	if env.Sequence == nil || *env.Sequence < 1 {
		v.fail("sequence", "must be an integer of at least 1")
	} else {
		ev.Sequence = *env.Sequence
	}
	if !isObject(env.Data) {
		v.fail("data", "must be a JSON object")
	}
	v.check("data.currency", data.Currency, true, wire.CheckCurrency)
	if data.TotalMinor == nil {
		v.fail("data.total_minor", "is required")
	} else if err := wire.CheckMinorUnits(*data.TotalMinor); err != nil {
		v.fail("data.total_minor", err.Error())
	}
	v.check("data.payment_id", data.PaymentID, ev.Type == shipment.InvoicePaid, wire.CheckKeyID)
	v.check("data.refund_id", data.RefundID, ev.Type == shipment.InvoiceRefunded, wire.CheckKeyID)
	return ev, v.errs
}

// validator collects the invalid fields of one event.
type validator struct {
	errs []problem.FieldError
}

func (v *validator) fail(field, detail string) {
	v.errs = append(v.errs, problem.FieldError{Field: field, Detail: detail})
}

func (v *validator) uuid(field, s string) uuid.UUID {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		v.fail(field, "must be a UUID")
		return uuid.Nil
	}
	return id
}

// check applies rule to s, which may be empty (absent) unless required.
func (v *validator) check(field, s string, required bool, rule func(string) error) string {
	switch {
	case s == "" && required:
		v.fail(field, "is required")
	case s == "":
	default:
		if err := rule(s); err != nil {
			v.fail(field, err.Error())
		}
	}
	return s
}
