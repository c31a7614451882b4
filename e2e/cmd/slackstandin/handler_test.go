package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStandInAnswersLikeSlackAndLogsTheMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, contentType, body string
		wantAnswer                    string
		wantMessage                   any
	}{
		{
			name: "incoming webhook", path: "/services/T0/B0/X", contentType: "application/json",
			body: `{"text":"event dead-lettered"}`, wantAnswer: "ok",
			wantMessage: map[string]any{"text": "event dead-lettered"},
		},
		{
			name: "web api", path: "/api/chat.postMessage", contentType: "application/x-www-form-urlencoded",
			body: "channel=%23on-call&text=circuit+opened&token=xoxb-secret", wantAnswer: `"ok":true`,
			wantMessage: map[string]any{"channel": []any{"#on-call"}, "text": []any{"circuit opened"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			srv := httptest.NewServer(newHandler(slog.New(slog.NewJSONHandler(&logs, nil))))
			t.Cleanup(srv.Close)

			resp, err := http.Post(srv.URL+tc.path, tc.contentType, strings.NewReader(tc.body))
			require.NoError(t, err)
			answer, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(answer), tc.wantAnswer)

			var line struct {
				Msg     string `json:"msg"`
				Path    string `json:"path"`
				Message any    `json:"message"`
			}
			require.NoError(t, json.Unmarshal(logs.Bytes(), &line), logs.String())
			require.Equal(t, "slack message", line.Msg)
			require.Equal(t, tc.path, line.Path)
			require.Equal(t, tc.wantMessage, line.Message)
			require.NotContains(t, logs.String(), "xoxb-secret")
		})
	}
}

func TestStandInRefusesOtherMethods(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newHandler(slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/services/T0/B0/X")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}
