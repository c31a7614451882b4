package ops

import (
	"context"
	"strconv"

	"github.com/google/uuid"

	"handoff/finance/internal/audit"
)

// Audit returns a page of the audit log, newest first: every action, or those that
// changed one event or touched one invoice. A limit beyond audit.MaxLimit is a
// validation error of field "limit".
func (s *Service) Audit(ctx context.Context, q audit.Query) (audit.Page, error) {
	if q.Limit < 0 || q.Limit > audit.MaxLimit {
		return audit.Page{}, &ValidationError{Field: "limit", Detail: "must be between 1 and " + strconv.Itoa(audit.MaxLimit)}
	}
	return s.audit.List(ctx, s.cfg.DB, q)
}

// EventActions returns the actions that changed one event, oldest first.
func (s *Service) EventActions(ctx context.Context, id uuid.UUID) ([]audit.Entry, error) {
	byEvent, err := s.audit.ForEvents(ctx, s.cfg.DB, id)
	return byEvent[id], err
}
