package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// Response is a decoded answer of a service.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it is not JSON.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %d %s: %v", r.Status, r.Body, err)
	}
}

// Call sends one request with a bearer token (if any), a JSON body (if not nil, or raw
// when []byte) and extra header pairs, failing the test on a transport error. Like Do,
// it holds the exchange to the service's OpenAPI document.
func Call(t testing.TB, method, url, token string, body any, headers ...string) Response {
	t.Helper()
	r, err := Do(method, url, token, body, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Do is Call for any goroutine: each request goes on a fresh connection, so
// concurrent calls are truly concurrent. An exchange with a service a test started
// (NewService) is held to that service's OpenAPI document, and a mismatch fails that
// test (see contract).
func Do(method, url, token string, body any, headers ...string) (Response, error) {
	var rd io.Reader
	var b []byte
	if body != nil {
		var ok bool
		if b, ok = body.([]byte); !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return Response{}, err
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return Response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, ExpectContinueTimeout: 5 * time.Second}}
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	r := Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
	checkExchange(req, b, r)
	return r, nil
}
