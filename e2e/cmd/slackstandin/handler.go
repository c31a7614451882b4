package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// maxMessageBytes bounds one message; Slack's own limit is far below it.
const maxMessageBytes = 1 << 20

// newHandler answers every POST as Slack would and logs the message it carried: JSON
// bodies as they are, form bodies (the Web API) as their fields without the token.
func newHandler(log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "only POST", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessageBytes))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		log.Info("slack message", "path", r.URL.Path, "message", message(r.Header.Get("Content-Type"), body))
		if strings.HasSuffix(r.URL.Path, "/chat.postMessage") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true,"channel":"C0STANDIN","ts":"0.000001"}`)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
	})
}

// message is what a log line shows of body: decoded JSON, the form fields of a Web
// API call (never its token), or the text itself.
func message(contentType string, body []byte) any {
	media, _, _ := mime.ParseMediaType(contentType)
	switch {
	case media == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return string(body)
		}
		form.Del("token")
		return form
	case json.Valid(body):
		return json.RawMessage(body)
	default:
		return string(body)
	}
}
