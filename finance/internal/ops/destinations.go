package ops

import (
	"context"
	"errors"
	"strings"

	"github.com/uptrace/bun"

	"handoff/finance/internal/audit"
	"handoff/pkg/integrationkit/outbox"
)

// Retarget moves every undelivered event addressed to from over to the current
// destination (Config.Destination), all due now (outbox.Store.Retarget), and
// records it; it returns how many moved. from equal to the current destination is a
// validation error of field "from".
func (s *Service) Retarget(ctx context.Context, from string, act Action) (int, error) {
	act, err := act.check()
	if err != nil {
		return 0, err
	}
	if !storable(from) || len(from) > maxDestinationLength {
		return 0, &ValidationError{Field: "from", Detail: "must be valid UTF-8 without NUL, at most 2048 bytes"}
	}
	if s.cfg.Destination == "" {
		return 0, errors.New("ops: no current destination to retarget to")
	}
	e, err := s.act(ctx, act, func(ctx context.Context, tx bun.IDB) (audit.Entry, []audit.Event, error) {
		moved, err := s.cfg.Outbox.Retarget(ctx, tx, from, s.cfg.Destination)
		if err != nil {
			return audit.Entry{}, nil, err
		}
		changed, err := events(moved)
		if err != nil {
			return audit.Entry{}, nil, err
		}
		return audit.Entry{Action: audit.Retarget, Count: len(moved), Filter: &audit.Filter{Destination: from},
			Destination: s.cfg.Destination}, changed, nil
	})
	return e.Count, err
}

// Pause stops deliveries to dest on every replica from their next request, until
// Resume (breaker.Breaker.Pause), and records it; ErrPaused when it is paused already.
func (s *Service) Pause(ctx context.Context, dest string, act Action) error {
	act, err := checkDestination(dest, act)
	if err != nil {
		return err
	}
	_, err = s.act(ctx, act, func(ctx context.Context, tx bun.IDB) (audit.Entry, []audit.Event, error) {
		changed, err := s.cfg.Circuits.Pause(ctx, tx, dest)
		if err == nil && !changed {
			err = ErrPaused
		}
		return audit.Entry{Action: audit.Pause, Destination: dest}, nil, err
	})
	return err
}

// Resume lets deliveries to dest go again, makes the events deferred by its pause due
// at once and wakes the dispatchers, and records it; it returns how many events it
// made due, or ErrNotPaused.
func (s *Service) Resume(ctx context.Context, dest string, act Action) (int, error) {
	act, err := checkDestination(dest, act)
	if err != nil {
		return 0, err
	}
	e, err := s.act(ctx, act, func(ctx context.Context, tx bun.IDB) (audit.Entry, []audit.Event, error) {
		changed, err := s.cfg.Circuits.Resume(ctx, tx, dest)
		if err == nil && !changed {
			err = ErrNotPaused
		}
		if err != nil {
			return audit.Entry{}, nil, err
		}
		n, err := s.cfg.Outbox.Hasten(ctx, tx, dest, outbox.DeferredByPause)
		if err != nil {
			return audit.Entry{}, nil, err
		}
		return audit.Entry{Action: audit.Resume, Count: int(n), Destination: dest}, nil, s.cfg.Outbox.Notify(ctx, tx)
	})
	return e.Count, err
}

func checkDestination(dest string, act Action) (Action, error) {
	switch {
	case strings.TrimSpace(dest) == "":
		return act, &ValidationError{Field: "destination", Detail: "is required"}
	case len(dest) > maxDestinationLength:
		return act, &ValidationError{Field: "destination", Detail: "must be at most 2048 bytes"}
	case !storable(dest):
		return act, &ValidationError{Field: "destination", Detail: "must be valid UTF-8 without NUL"}
	}
	return act.check()
}
