package invoice

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Find returns the invoice, with its lines, that ref names: its id (a UUID), its number
// (INV-004711, any case) or the number's digits (4711). A ref of none of these forms is
// a *ValidationError; an unknown invoice is ErrNotFound.
func (s *Service) Find(ctx context.Context, ref string) (Invoice, error) {
	ref = strings.TrimSpace(ref)
	if id, err := uuid.Parse(ref); err == nil {
		return s.Get(ctx, id)
	}
	seq, ok := numberSeq(ref)
	if !ok {
		var fe fieldErrors
		fe.add("invoice", "must be an invoice id (UUID), a number such as INV-004711, or its digits")
		return Invoice{}, fe.err()
	}
	inv, err := s.store.invoiceBySeq(ctx, s.db, seq)
	if err != nil {
		return Invoice{}, fmt.Errorf("find invoice %s: %w", ref, err)
	}
	if err := s.withLines(ctx, s.db, &inv); err != nil {
		return Invoice{}, fmt.Errorf("find invoice %s: %w", ref, err)
	}
	return inv, nil
}

// numberSeq reads the seq out of an invoice number: INV-000042 and 42 both give 42.
func numberSeq(ref string) (int64, bool) {
	if len(ref) > 4 && strings.EqualFold(ref[:4], "INV-") {
		ref = ref[4:]
	}
	if ref == "" || strings.TrimLeft(ref, "0123456789") != "" {
		return 0, false
	}
	seq, err := strconv.ParseInt(ref, 10, 64)
	return seq, err == nil && seq > 0
}
