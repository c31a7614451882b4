package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"handoff/docs/openapi"
)

// A contract holds every exchange with one service to that service's OpenAPI document
// (docs/openapi): the answer must be one the document describes, and a request the
// document refuses must be refused by the service as well (4xx). A request the
// document admits may still be refused, since the document cannot say everything a
// service checks (a currency in use, a key already taken).
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// documents are the OpenAPI documents of the binaries, by binary name.
var documents = map[string]func() []byte{"finance": openapi.Finance, "logistics": openapi.Logistics}

var (
	contractsOnce sync.Once
	contracts     map[string]*contract
	contractsErr  error
)

// contractOf returns the contract of the binary called name, or nil when it has no
// document; documents are loaded once per process.
func contractOf(name string) (*contract, error) {
	contractsOnce.Do(func() {
		contracts = map[string]*contract{}
		for svc, doc := range documents {
			c, err := loadContract(doc())
			if err != nil {
				contractsErr = fmt.Errorf("docs/openapi/%s.yaml: %w", svc, err)
				return
			}
			contracts[svc] = c
		}
	})
	return contracts[name], contractsErr
}

func loadContract(doc []byte) (*contract, error) {
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(context.Background()); err != nil {
		return nil, err
	}
	d.Servers = nil // the document names the default address; the harness serves on others
	r, err := gorillamux.NewRouter(d)
	if err != nil {
		return nil, err
	}
	return &contract{doc: d, router: r}, nil
}

// contractOptions make a status the document does not list a mismatch, and check that
// the credentials a security scheme names are present (the service judges their value).
var contractOptions = &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: credentialsPresent}

func credentialsPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header
	switch s := in.SecurityScheme; {
	case s.Type == "http" && s.Scheme == "bearer":
		if token, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); !ok || token == "" {
			return errors.New("no bearer token")
		}
	case s.Type == "apiKey" && s.In == "header":
		if h.Get(s.Name) == "" {
			return fmt.Errorf("no %s header", s.Name)
		}
	default:
		return fmt.Errorf("the harness cannot check security scheme %q", in.SecuritySchemeName)
	}
	return nil
}

// check returns what is wrong with one exchange: req was sent with body and answered
// with resp.
func (c *contract) check(req *http.Request, body []byte, resp Response) error {
	sent := req.Clone(context.Background())
	sent.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := c.router.FindRoute(sent)
	if err != nil {
		if resp.Status == http.StatusNotFound || resp.Status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("the document has no such operation, yet the service answered %d", resp.Status)
	}
	in := &openapi3filter.RequestValidationInput{Request: sent, PathParams: params, Route: route, Options: contractOptions}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && !isClientError(resp.Status) {
		return fmt.Errorf("the document refuses the request, yet the service answered %d: %w", resp.Status, err)
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.Status, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(resp.Body)), Options: contractOptions,
	})
	if err != nil {
		return fmt.Errorf("the answer is not one the document describes: %w\n%d %s", err, resp.Status, resp.Body)
	}
	return nil
}

func isClientError(status int) bool { return status >= 400 && status < 500 }

// BatchWebhook names the webhook of a batch delivery (to the destination + "/batch").
const BatchWebhook = "invoice.events.batch"

// CheckDelivery returns what is wrong with a request finance sent to a destination, or
// nil when it is the one the `webhooks` of finance's document describe for the event
// type its body names (or, sent to a batch endpoint, for a batch): the headers, the
// signature's headers and the envelope.
func CheckDelivery(req *http.Request, body []byte) error {
	c, err := contractOf("finance")
	if err != nil {
		return err
	}
	var ev struct {
		Type  string          `json:"type"`
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("the delivery is not a JSON event: %w", err)
	}
	name := ev.Type
	if strings.HasSuffix(req.URL.Path, "/batch") {
		name = BatchWebhook
	}
	item := c.doc.Webhooks[name]
	if item == nil || item.Post == nil {
		return fmt.Errorf("the document describes no webhook %q", name)
	}
	sent := req.Clone(context.Background())
	sent.Body = io.NopCloser(bytes.NewReader(body))
	route := &routers.Route{Spec: c.doc, Path: req.URL.Path, PathItem: item, Method: http.MethodPost, Operation: item.Post}
	return openapi3filter.ValidateRequest(context.Background(),
		&openapi3filter.RequestValidationInput{Request: sent, Route: route, Options: contractOptions})
}

// watched maps the address of each service a test started to its contract and test.
var watched = struct {
	sync.Mutex
	by map[string]watch
}{by: map[string]watch{}}

type watch struct {
	t        testing.TB
	contract *contract
}

// watchService holds every exchange Do has with s to its binary's document until the
// test ends, failing t on a mismatch.
func watchService(t testing.TB, s *Service) {
	t.Helper()
	c, err := contractOf(s.name)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil {
		return
	}
	watched.Lock()
	watched.by[s.Addr] = watch{t: t, contract: c}
	watched.Unlock()
	t.Cleanup(func() {
		watched.Lock()
		delete(watched.by, s.Addr)
		watched.Unlock()
	})
}

// checkExchange fails the test owning the service at req's address when the exchange
// breaks the service's document.
func checkExchange(req *http.Request, body []byte, resp Response) {
	watched.Lock()
	w, ok := watched.by[req.URL.Host]
	watched.Unlock()
	if !ok {
		return
	}
	if err := w.contract.check(req, body, resp); err != nil {
		w.t.Errorf("%s %s breaks docs/openapi: %v", req.Method, req.URL.RequestURI(), err)
	}
}
