package shipment

import (
	"errors"
	"testing"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	at := func(s State, last int64) *Shipment { return &Shipment{State: s, LastEventSeq: last} }
	tests := []struct {
		name    string
		cur     *Shipment
		ev      EventType
		seq     int64
		want    decision
		wantErr error
	}{
		{"issued creates awaiting payment", nil, InvoiceIssued, 1, decision{ResultApplied, AwaitingPayment}, nil},
		{"paid without issued creates waiting", nil, InvoicePaid, 2, decision{ResultApplied, Waiting}, nil},
		{"refund before any shipment waits", nil, InvoiceRefunded, 3, decision{}, ErrNotYetApplicable},
		{"paid moves awaiting payment to waiting", at(AwaitingPayment, 1), InvoicePaid, 2, decision{ResultApplied, Waiting}, nil},
		{"older event is stale", at(Waiting, 2), InvoiceIssued, 1, decision{result: ResultStale}, nil},
		{"same sequence is stale", at(Waiting, 2), InvoicePaid, 2, decision{result: ResultStale}, nil},
		{"stale refund is stale even unshipped", at(Cancelled, 3), InvoiceRefunded, 3, decision{result: ResultStale}, nil},
		{"issued again has no effect", at(AwaitingPayment, 1), InvoiceIssued, 2, decision{result: ResultIgnored}, nil},
		{"paid again has no effect", at(Picking, 2), InvoicePaid, 3, decision{result: ResultIgnored}, nil},
		{"refund while awaiting payment cancels", at(AwaitingPayment, 1), InvoiceRefunded, 2, decision{ResultApplied, Cancelled}, nil},
		{"refund while waiting cancels", at(Waiting, 2), InvoiceRefunded, 3, decision{ResultApplied, Cancelled}, nil},
		{"refund while picking cancels", at(Picking, 2), InvoiceRefunded, 3, decision{ResultApplied, Cancelled}, nil},
		{"refund while packed cancels", at(Packed, 2), InvoiceRefunded, 3, decision{ResultApplied, Cancelled}, nil},
		{"refund once shipped awaits the return", at(Shipped, 2), InvoiceRefunded, 3, decision{ResultApplied, ReturnPending}, nil},
		{"refund once delivered awaits the return", at(Delivered, 2), InvoiceRefunded, 3, decision{ResultApplied, ReturnPending}, nil},
		{"refund of a cancelled shipment has no effect", at(Cancelled, 3), InvoiceRefunded, 4, decision{result: ResultIgnored}, nil},
		{"paid after cancellation has no effect", at(Cancelled, 3), InvoicePaid, 4, decision{result: ResultIgnored}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := decide(tt.cur, Event{Type: tt.ev, Sequence: tt.seq})
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("decide = %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestCanMove(t *testing.T) {
	t.Parallel()
	allowed := map[[2]State]bool{
		{Waiting, Picking}: true, {Picking, Packed}: true, {Packed, Shipped}: true, {Shipped, Delivered}: true,
	}
	for _, from := range states {
		for _, to := range states {
			if got := CanMove(from, to); got != allowed[[2]State{from, to}] {
				t.Errorf("CanMove(%s, %s) = %t", from, to, got)
			}
		}
	}
}

func TestStateValid(t *testing.T) {
	t.Parallel()
	for _, s := range states {
		if !s.Valid() {
			t.Errorf("%s is not valid", s)
		}
	}
	for _, s := range []State{"", "Waiting", "lost"} {
		if s.Valid() {
			t.Errorf("%q is valid", s)
		}
	}
}
