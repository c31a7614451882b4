package pgdb

import (
	"context"
	"database/sql/driver"
	"time"
)

// SlotWait bounds how long a new connection waits for the server to free a slot. It
// is long because a shared server can stay full for minutes while other suites run.
const SlotWait = 5 * time.Minute

// WaitForSlot calls connect until it returns anything but too_many_connections
// (SQLSTATE 53300: max_connections reached, or only the superuser-reserved slots
// left), for at most SlotWait and while ctx lasts, pausing 50 ms, doubling up to 1 s,
// between attempts. Connections come and go on a shared server, so a moment at its
// limit — replicas starting together, another suite's tests — costs a wait instead of
// a failed start, request or test.
func WaitForSlot[C any](ctx context.Context, connect func(context.Context) (C, error)) (C, error) {
	deadline := time.Now().Add(SlotWait)
	pause := 50 * time.Millisecond
	for {
		c, err := connect(ctx)
		if Code(err) != CodeTooManyConnections || time.Now().Add(pause).After(deadline) {
			return c, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return c, err
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// slotConnector makes every connection a database/sql pool opens wait for a slot.
type slotConnector struct{ driver.Connector }

func (c slotConnector) Connect(ctx context.Context) (driver.Conn, error) {
	return WaitForSlot(ctx, c.Connector.Connect)
}
