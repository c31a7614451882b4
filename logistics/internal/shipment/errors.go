package shipment

import (
	"errors"
	"fmt"
)

// ErrNotFound means no shipment has the given id.
var ErrNotFound = errors.New("shipment not found")

// ErrNotYetApplicable means an event needs a shipment that does not exist yet (a
// refund before the invoice was seen); the sender should try again later.
var ErrNotYetApplicable = errors.New("event cannot apply yet: the invoice has no shipment")

// TransitionError refuses a move the state machine does not allow.
type TransitionError struct {
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("a shipment cannot move from %s to %s", e.From, e.To)
}

// VersionError refuses a move decided on an outdated version of the shipment.
type VersionError struct {
	Given, Current int64
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("version %d is stale: the shipment is at version %d", e.Given, e.Current)
}
