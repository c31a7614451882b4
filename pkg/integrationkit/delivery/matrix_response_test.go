package delivery_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
)

// waitRequests waits until the dispatcher reports the first event's n-th request
// settled, and returns its row then.
func (b *bundle) waitRequests(t *testing.T, n int) row {
	t.Helper()
	var first uuid.UUID
	require.NoError(t, b.db.NewRaw(`SELECT id FROM kit_outbox ORDER BY aggregate_key, aggregate_seq LIMIT 1`).
		Scan(context.Background(), &first))
	b.observed.wait(t, 15*time.Second, fmt.Sprintf("%d requests of the first event settled", n), func(h *history) bool {
		return h.count(func(s settlement) bool { return s.rec.ID == first && isSent(s) }) >= n
	})
	rows := b.rows(t)
	require.GreaterOrEqual(t, rows[0].Requests, n)
	require.False(t, rows[0].Leased, "settled, the lease is given back")
	return rows[0]
}

// countingDialer counts the bytes the dispatcher reads off the wire: nothing it never
// read can be in its memory.
type countingDialer struct{ read atomic.Int64 }

// guard is the loopback guard, its connections counted.
func (c *countingDialer) guard(t *testing.T) *egress.Dialer {
	t.Helper()
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	require.NoError(t, err)
	return egress.New(egress.Config{Allow: allow, WrapConn: func(conn net.Conn) net.Conn {
		return countingConn{Conn: conn, read: &c.read}
	}})
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// gzipBomb compresses n bytes of 'a' (about 800:1).
func gzipBomb(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range n >> 20 {
		_, err := zw.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// A 2 GiB answer and a gzip bomb (64 MiB of 'a' in 82 KB) are read up to the 64 KiB
// cap, counted after decompression, and the connection is closed: the dispatcher
// reads little more than 64 KiB off the wire for the plain body, and only a few KiB of
// the bomb, whose snippet is decompressed text.
func TestResponseBodyIsReadAtMost64KiB(t *testing.T) {
	t.Parallel()
	bomb := gzipBomb(t, 64<<20)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	cases := []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request) int64
		maxRead int64
		snippet string
	}{
		{"2 GiB body", func(w http.ResponseWriter, _ *http.Request) int64 {
			w.Header().Set("Content-Length", strconv.Itoa(2<<30))
			var wrote int64
			for wrote < 2<<30 {
				n, err := w.Write(chunk)
				wrote += int64(n)
				if err != nil {
					break
				}
			}
			return wrote
		}, 64<<10 + 16<<10, strings.Repeat("x", 1<<10)},
		{"gzip bomb", func(w http.ResponseWriter, r *http.Request) int64 {
			if r.Header.Get("Accept-Encoding") != "gzip" {
				w.WriteHeader(http.StatusTeapot) // the premise failed: no transparent decompression
				return 0
			}
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", strconv.Itoa(len(bomb)))
			n, _ := w.Write(bomb)
			return int64(n)
		}, 16 << 10, strings.Repeat("a", 1<<10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			wrote := make(chan int64, 1)
			b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				wrote <- c.answer(w, r)
			}))
			b.enqueue(t, "agg-1", 1)
			dialer := &countingDialer{}
			b.runWith(t, delivery.Config{}, delivery.Deps{Guard: dialer.guard(t)})

			rows := b.waitSettled(t, 15*time.Second)
			require.Equal(t, outbox.StatusDelivered, rows[0].Status)
			select {
			case n := <-wrote:
				require.Less(t, n, int64(256<<20), "the sender hung up long before the end")
			case <-time.After(15 * time.Second):
				t.Fatal("the receiver was never cut off")
			}
			t.Logf("%d bytes read off the wire", dialer.read.Load())
			require.Less(t, dialer.read.Load(), c.maxRead, "bytes read off the wire")
			got := b.attempts(t)
			require.Len(t, got, 1)
			require.Equal(t, c.snippet, got[0].Snippet)
		})
	}
}

// Response headers over 64 KiB (here 2 MiB) are refused by MaxResponseHeaderBytes
// after reading at most the limit; the attempt is a counted, retried failure.
func TestHugeResponseHeadersAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Padding", strings.Repeat("p", 2<<20))
		w.WriteHeader(http.StatusOK)
	}))
	b.enqueue(t, "agg-1", 1)
	dialer := &countingDialer{}
	b.runWith(t, delivery.Config{Backoff: backoff.Schedule{time.Hour}}, delivery.Deps{Guard: dialer.guard(t)})

	r := b.waitRequests(t, 1)
	require.Equal(t, outbox.StatusPending, r.Status)
	require.Equal(t, 1, r.Attempts, "counted")
	got := b.attempts(t)
	require.Len(t, got, 1)
	require.Contains(t, got[0].Error, "server response headers exceeded 65536 bytes")
	require.Less(t, dialer.read.Load(), int64(64<<10+16<<10), "bytes read off the wire")
}

// A receiver that sends its headers and then trickles the body a byte at a time is
// cut off by the request's total deadline (Timeout covers the body), the connection
// closed and the attempt settled.
func TestTricklingBodyIsCutAtTheDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	closed := make(chan struct{})
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				close(closed)
				return
			case <-tick.C:
				_, _ = w.Write([]byte{'.'})
				w.(http.Flusher).Flush()
			}
		}
	}))
	b.enqueue(t, "agg-1", 1)
	b.runWith(t, delivery.Config{Timeout: time.Second, Lease: 5 * time.Second, Backoff: backoff.Schedule{time.Hour}}, delivery.Deps{})

	b.waitRequests(t, 1)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the trickling connection was never closed")
	}
	got := b.attempts(t)
	require.Len(t, got, 1)
	require.GreaterOrEqual(t, got[0].DurationMS, int64(900), "the body was read until the deadline")
	require.Less(t, got[0].DurationMS, int64(3000), "and not past it")
}

// The connection is reset after the receiver read the whole request: the outcome is
// unknown, so the event is sent again with the same key and body.
func TestResetAfterTheBodyIsRetriedWithTheSameKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	var keys []string
	var bodies [][]byte
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get(delivery.HeaderIdempotencyKey))
		bodies = append(bodies, body)
		first := len(keys) == 1
		mu.Unlock()
		if !first {
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0) // RST instead of FIN
			_ = conn.Close()
		}
	}))
	b.enqueue(t, "agg-1", 1)
	b.runWith(t, delivery.Config{Backoff: backoff.Schedule{20 * time.Millisecond}}, delivery.Deps{})

	rows := b.waitSettled(t, 15*time.Second)
	require.Equal(t, outbox.StatusDelivered, rows[0].Status)
	require.Equal(t, 2, rows[0].Requests)
	got := b.attempts(t)
	require.Equal(t, "connection_reset", got[0].Class, got[0].Error)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"thing.happened:agg-1:1", "thing.happened:agg-1:1"}, keys)
	require.JSONEq(t, string(bodies[0]), string(bodies[1]), "the same event")
}

// A rejection is final: the event is dead-lettered after its one request and no
// dispatcher can claim it again; only an operator's replay sends it again.
func TestRejectionsAreDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusNotFound, http.StatusGone, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType} {
		t.Run(strconv.Itoa(code)+" "+http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			b := setup(t, status(code))
			b.enqueue(t, "agg-1", 1)
			b.start(t, delivery.Config{})
			rows := b.waitSettled(t, 10*time.Second)
			require.Equal(t, row{Status: outbox.StatusFailed, Attempts: 1, Requests: 1, Reason: "rejected_by_receiver"}, rows[0])
			recs, err := b.store.Claim(context.Background(), b.db, "another", 10, time.Minute)
			require.NoError(t, err)
			require.Empty(t, recs, "never claimed again")
			require.Len(t, b.recv.seen(), 1)
		})
	}
}

// A server certificate that does not verify (here an unknown authority) is a
// configuration error: the event is dead-lettered after one connection, not retried,
// and the dead letter pages on-call.
func TestBadCertificateIsDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	b.url = srv.URL
	b.enqueue(t, "agg-1", 1)
	b.start(t, delivery.Config{})

	rows := b.waitSettled(t, 10*time.Second)
	require.Equal(t, row{Status: outbox.StatusFailed, Attempts: 1, Requests: 1, Reason: "tls_certificate"}, rows[0])
	got := b.attempts(t)
	require.Equal(t, "tls_certificate", got[0].Class)
	require.Contains(t, got[0].Error, "certificate")
	require.EqualValues(t, 1, conns.Load(), "one connection, no retry")
}

// hangingResolver never answers, like a DNS server that swallows queries.
type hangingResolver struct{}

func (hangingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A lookup that never returns is cut off by the egress guard's timeout; the attempt
// is recorded as dns_error, counted and retried later.
func TestHangingDNSIsARetriedDNSError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.url = "http://logistics.example:8082/webhooks"
	b.enqueue(t, "agg-1", 1)
	guard := egress.New(egress.Config{Resolver: hangingResolver{}, Timeout: 200 * time.Millisecond})
	b.runWith(t, delivery.Config{Backoff: backoff.Schedule{time.Hour}}, delivery.Deps{Guard: guard})

	r := b.waitRequests(t, 1)
	require.Equal(t, outbox.StatusPending, r.Status)
	require.Equal(t, 1, r.Attempts)
	got := b.attempts(t)
	require.Equal(t, "dns_error", got[0].Class, got[0].Error)
	require.Less(t, got[0].DurationMS, int64(5000))
}

// An event logistics applied, whose answer was lost until the budget ran out, is
// replayed by hand: the same key goes out, the receiver answers duplicate, and the
// event is delivered with nothing applied twice.
func TestReplayOfAnAppliedDeadLetterIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	applied := map[string]int{}
	var attempts []string
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key := r.Header.Get(delivery.HeaderIdempotencyKey)
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, key+" attempt "+r.Header.Get(delivery.HeaderAttempt))
		if applied[key] == 0 {
			applied[key]++
			w.WriteHeader(http.StatusBadGateway) // applied, but the answer is lost on the way
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "duplicate": true})
	}))
	ctx := context.Background()
	id, err := b.store.Enqueue(ctx, b.db, outbox.Event{Type: "thing.happened", AggregateKey: "agg-1", Sequence: 1,
		IdempotencyKey: "thing.happened:agg-1:1", Destination: b.url, Payload: map[string]int{"seq": 1}})
	require.NoError(t, err)
	b.start(t, delivery.Config{MaxAttempts: 1})
	rows := b.waitSettled(t, 10*time.Second)
	require.Equal(t, "max_attempts_exhausted", rows[0].Reason)

	_, err = b.store.Retry(ctx, b.db, id)
	require.NoError(t, err)
	rows = b.waitSettled(t, 10*time.Second)
	require.Equal(t, outbox.StatusDelivered, rows[0].Status)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"thing.happened:agg-1:1 attempt 1", "thing.happened:agg-1:1 attempt 2"}, attempts)
	require.Equal(t, map[string]int{"thing.happened:agg-1:1": 1}, applied, "applied once")
}
