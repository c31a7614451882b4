package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// finance names, at start, each configured destination the guard refuses, and only
// those it will call.
func TestWarnRefusedNamesEachRefusedVariable(t *testing.T) {
	t.Parallel()
	allowed := map[string]string{
		"OUTBOUND_ALLOW":        "127.0.0.1/32",
		"LOGISTICS_WEBHOOK_URL": "http://127.0.0.1:8082/webhooks/finance",
		"LOGISTICS_OPS_TOKEN":   "ops-token-0123456789abcdef",
	}
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"everything allowed", map[string]string{"SLACK_WEBHOOK_URL": "http://127.0.0.1:9/services/x"}, nil},
		{"no allowlist", map[string]string{"OUTBOUND_ALLOW": ""}, []string{"LOGISTICS_WEBHOOK_URL", "LOGISTICS_API_URL"}},
		{"no allowlist, no dispatcher, no ops token",
			map[string]string{"OUTBOUND_ALLOW": "", "DISPATCH_ENABLED": "false", "LOGISTICS_OPS_TOKEN": ""}, nil},
		{"Slack webhook elsewhere", map[string]string{"SLACK_WEBHOOK_URL": "http://127.0.0.2:9/services/x"},
			[]string{"SLACK_WEBHOOK_URL"}},
		{"Slack API elsewhere", map[string]string{"SLACK_TOKEN": "xoxb-1", "SLACK_CHANNEL": "#c",
			"SLACK_API_URL": "http://[::1]:9/api/"}, []string{"SLACK_API_URL"}},
		{"Slack metadata", map[string]string{"SLACK_WEBHOOK_URL": "http://169.254.169.254/"}, []string{"SLACK_WEBHOOK_URL"}},
		{"logistics API elsewhere", map[string]string{"LOGISTICS_API_URL": "http://127.0.0.2:8082"},
			[]string{"LOGISTICS_API_URL"}},
		{"logistics API elsewhere, no ops token",
			map[string]string{"LOGISTICS_API_URL": "http://127.0.0.2:8082", "LOGISTICS_OPS_TOKEN": ""}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := maps.Clone(allowed)
			maps.Copy(env, c.env)
			maps.DeleteFunc(env, func(_, v string) bool { return v == "" }) // unset
			cfg, err := parseConfig(environ(env), "migrate")
			require.NoError(t, err)
			var logs bytes.Buffer
			warnRefused(newGuard(cfg), cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
			var named []string
			for line := range strings.Lines(logs.String()) {
				var rec struct{ Level, Msg, Variable string }
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				require.Equal(t, "WARN", rec.Level)
				require.True(t, strings.HasPrefix(rec.Msg, rec.Variable+" is refused by the SSRF guard: "), rec.Msg)
				named = append(named, rec.Variable)
			}
			require.Equal(t, c.want, named)
		})
	}
}
