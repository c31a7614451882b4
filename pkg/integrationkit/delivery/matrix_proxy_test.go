package delivery_test

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/egress/egresstest"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
)

// With HTTP_PROXY, HTTPS_PROXY and ALL_PROXY pointing at a listener and NO_PROXY
// empty, the dispatcher still dials the destination itself (through its guard) and
// the proxy sees no connection.
func TestDispatcherIgnoresTheEnvironmentProxy(t *testing.T) {
	t.Parallel()
	egresstest.RequireProxyIgnored(t, deliverWithProxyEnvironment)
}

// deliverWithProxyEnvironment delivers one event to logistics.test:port, a name the
// guard's resolver maps to loopback (a proxy would be skipped for a loopback address),
// and checks that the only name looked up and the only address dialed were the
// destination's.
func deliverWithProxyEnvironment(t *testing.T, port string) {
	dest := "http://logistics.test:" + port + "/hook"
	dns := &loopbackResolver{}
	var mu sync.Mutex
	var dialed []string
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	require.NoError(t, err)
	guard := egress.New(egress.Config{Allow: allow, Resolver: dns, WrapConn: func(c net.Conn) net.Conn {
		mu.Lock()
		dialed = append(dialed, c.RemoteAddr().String())
		mu.Unlock()
		return c
	}})
	db, _, store := outboxtest.Setup(t)
	b := &bundle{db: db, store: store, url: dest, observed: newObserved()}
	b.enqueue(t, "agg-1", 1)
	b.runWith(t, delivery.Config{}, delivery.Deps{Guard: guard})
	rows := b.waitSettled(t, 10*time.Second)
	require.Equal(t, outbox.StatusDelivered, rows[0].Status)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"127.0.0.1:" + port}, dialed)
	require.Equal(t, []string{"logistics.test"}, dns.looked())
}

// loopbackResolver answers 127.0.0.1 for every name and records the names asked.
type loopbackResolver struct {
	mu    sync.Mutex
	names []string
}

func (r *loopbackResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, host)
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func (r *loopbackResolver) looked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}
