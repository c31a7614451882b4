package e2e_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"handoff/e2e/harness"
)

// collector is an OTLP/HTTP trace receiver on loopback: it decodes every export
// (protobuf, POST /v1/traces) and keeps each span with its service's name.
type collector struct {
	URL string

	mu    sync.Mutex
	spans []collected
}

// collected is one exported span; ids are lowercase hex, parent "" for a root.
type collected struct {
	service, name       string
	trace, span, parent string
	linkedTraces        []string
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.add(&req)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty body is an empty ExportTraceServiceResponse
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *collector) add(req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				span := collected{service: service, name: s.Name, trace: hex.EncodeToString(s.TraceId),
					span: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId)}
				for _, l := range s.Links {
					span.linkedTraces = append(span.linkedTraces, hex.EncodeToString(l.TraceId))
				}
				c.spans = append(c.spans, span)
			}
		}
	}
}

// inTrace returns the spans of trace received so far.
func (c *collector) inTrace(trace string) []collected {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []collected
	for _, s := range c.spans {
		if s.trace == trace {
			out = append(out, s)
		}
	}
	return out
}

// chain is what one paid invoice's trace must hold: each span by service and name.
type chain map[string]collected

// waitForChain polls until trace holds a span of every name in want (service/name),
// and returns them.
func (c *collector) waitForChain(t *testing.T, trace string, want []string, within time.Duration) chain {
	t.Helper()
	got := chain{}
	require.Eventually(t, func() bool {
		for _, s := range c.inTrace(trace) {
			got[s.service+"/"+s.name] = s
		}
		for _, w := range want {
			if _, ok := got[w]; !ok {
				return false
			}
		}
		return true
	}, within, 50*time.Millisecond, "trace %s holds %v", trace, want)
	return got
}

// The clerk's traceparent below: a known trace, and the span id of the clerk's side.
const (
	clerkTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clerkParent = "00f067aa0ba902b7"
)

// tracedEnv starts both services exporting to c, with extra variables on top.
func tracedEnv(t *testing.T, c *collector, delay time.Duration, finance map[string]string) *harness.Env {
	t.Helper()
	otel := func(extra map[string]string) map[string]string {
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL,
			"OTEL_BSP_SCHEDULE_DELAY": strconv.FormatInt(delay.Milliseconds(), 10)}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	return harness.New(t, harness.Options{FinanceEnv: otel(finance), LogisticsEnv: otel(nil)})
}

// payTraced pays inv in full with the clerk's traceparent and waits for its shipment.
func payTraced(t *testing.T, env *harness.Env, inv invoice) {
	t.Helper()
	r := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
		map[string]any{"payment_id": "pay-traced", "amount_minor": inv.TotalMinor},
		"traceparent", "00-"+clerkTrace+"-"+clerkParent+"-01")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	waitForShipment(t, env, inv, "waiting", 15*time.Second)
}

// requireOneTrace checks the links of a paid invoice's trace: the clerk's request →
// its outbox write → the claim and the delivery → the request to logistics →
// logistics' handler → its transaction.
func requireOneTrace(t *testing.T, got chain, webhook, apply string) {
	t.Helper()
	api := got["finance/POST /v1/invoices/:id/payments"]
	enqueue := got["finance/outbox.enqueue"]
	deliver, send := got["finance/delivery.deliver"], got["finance/delivery.send"]
	handler, tx := got["logistics/"+webhook], got["logistics/"+apply]
	require.Equal(t, clerkParent, api.parent, "the API span continues the clerk's traceparent")
	require.Equal(t, api.span, enqueue.parent)
	require.Equal(t, enqueue.span, got["finance/outbox.claim"].parent)
	require.Equal(t, enqueue.span, deliver.parent)
	require.Equal(t, deliver.span, send.parent)
	require.Equal(t, deliver.span, got["finance/outbox.settle"].parent)
	require.Equal(t, send.span, handler.parent, "logistics continues the traceparent finance sent")
	require.Equal(t, handler.span, tx.parent)
}

// One trace shows a payment from the clerk's request to logistics' transaction: the
// clerk sends a traceparent, finance stores it with the outbox row and sends it with
// the delivery, logistics continues it; both services export to one collector
// (spans told apart by service.name). In single mode and in batch mode, the default.
func TestOneTraceFromPaymentToShipment(t *testing.T) {
	t.Parallel()
	for _, m := range []struct{ mode, webhook, apply string }{
		{"single", "POST /webhooks/finance", "inbox.process"},
		{"batch", "POST /webhooks/finance/batch", "inbox.process_batch"},
	} {
		t.Run(m.mode, func(t *testing.T) {
			t.Parallel()
			c := newCollector(t)
			env := tracedEnv(t, c, 200*time.Millisecond, map[string]string{"DISPATCH_MODE": m.mode})
			inv := issue(t, env, "cust-traced")
			payTraced(t, env, inv)

			got := c.waitForChain(t, clerkTrace, []string{
				"finance/POST /v1/invoices/:id/payments", "finance/outbox.enqueue", "finance/outbox.claim",
				"finance/delivery.deliver", "finance/delivery.send", "finance/outbox.settle",
				"logistics/" + m.webhook, "logistics/" + m.apply,
			}, 15*time.Second)
			requireOneTrace(t, got, m.webhook, m.apply)
			require.Equal(t, 1, query[int](t, env.FinanceDB,
				`SELECT count(*) FROM finance_outbox WHERE traceparent LIKE '00-' || $1 || '-%'`, clerkTrace),
				"the paid event's row keeps the clerk's trace")
		})
	}
}

// Spans wait in the exporter's batch (here 10 minutes); SIGTERM exports them before
// the process exits. In batch mode a lone event's batch is a child of its trace.
func TestSpansAreFlushedOnShutdown(t *testing.T) {
	t.Parallel()
	c := newCollector(t)
	env := tracedEnv(t, c, 10*time.Minute, map[string]string{"DISPATCH_MODE": "batch"})
	inv := issue(t, env, "cust-flushed")
	payTraced(t, env, inv)
	require.Empty(t, c.inTrace(clerkTrace), "nothing exported before the schedule")

	env.Finance.Stop(t)
	env.Logistics.Stop(t)
	require.Equal(t, 0, env.Finance.ExitCode())
	require.Equal(t, 0, env.Logistics.ExitCode())
	got := c.waitForChain(t, clerkTrace, []string{
		"finance/POST /v1/invoices/:id/payments", "finance/outbox.enqueue", "finance/outbox.claim",
		"finance/delivery.deliver", "finance/delivery.send", "finance/outbox.settle",
		"logistics/POST /webhooks/finance/batch", "logistics/inbox.process_batch",
	}, time.Second)
	requireOneTrace(t, got, "POST /webhooks/finance/batch", "inbox.process_batch")
}
