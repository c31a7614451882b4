package delivery_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/webhook"
)

// receiver is a scripted HTTP receiver: it answers the scripted statuses in turn
// (then 200) and records every request it verified.
type receiver struct {
	mu       sync.Mutex
	script   []func(w http.ResponseWriter)
	requests []seen
	verifier *webhook.Verifier
}

type seen struct {
	key      string
	attempt  int
	envelope delivery.Envelope
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := r.verifier.Verify(req.Header, body); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var env delivery.Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	attempt, _ := strconv.Atoi(req.Header.Get(delivery.HeaderAttempt))
	r.mu.Lock()
	r.requests = append(r.requests, seen{key: req.Header.Get(delivery.HeaderIdempotencyKey), attempt: attempt, envelope: env})
	var answer func(w http.ResponseWriter)
	if len(r.script) > 0 {
		answer, r.script = r.script[0], r.script[1:]
	}
	r.mu.Unlock()
	if answer == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	answer(w)
}

func (r *receiver) seen() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.requests...)
}

func status(code int, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
	}
}

// isBatch tells a batch request from a single delivery by its path.
func isBatch(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/batch") }

// batchOf decodes the batch request in body; a body that is none is answered 400 and
// reported false.
func batchOf(w http.ResponseWriter, body []byte) (delivery.BatchRequest, bool) {
	var req delivery.BatchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return req, false
	}
	return req, true
}

// answerBatch answers the items of req, in order, each with answer(item).
func answerBatch(w http.ResponseWriter, req delivery.BatchRequest, answer func(delivery.BatchItem) delivery.BatchAnswer) {
	var resp delivery.BatchResponse
	for _, it := range req.Items {
		resp.Items = append(resp.Items, answer(it))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// accepted answers 200 to an item.
func accepted(it delivery.BatchItem) delivery.BatchAnswer {
	return delivery.BatchAnswer{IdempotencyKey: it.IdempotencyKey, Status: http.StatusOK}
}

// acceptAll answers 200 to a single delivery, and 200 to every item of a batch.
func acceptAll(w http.ResponseWriter, r *http.Request, body []byte) {
	if !isBatch(r) {
		return
	}
	if req, ok := batchOf(w, body); ok {
		answerBatch(w, req, accepted)
	}
}
