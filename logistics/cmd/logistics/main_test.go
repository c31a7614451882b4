package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command/commandtest"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/webhook"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logistics' standard commands (help, help --json, version, healthcheck) keep the
// kit's promises with logistics' declarations, and README.md lists every variable.
func TestStandardCommands(t *testing.T) {
	t.Parallel()
	commandtest.Suite(t, commandtest.Binary{Name: "logistics", Run: run, Settings: (&Config{}).settings(),
		README: "../../../README.md"})
}

func TestHelpListsCommandsAndVariables(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"help", "--help", "-h"} {
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), []string{arg}, env(nil), &out, io.Discard))
		for _, want := range []string{"serve", "migrate up", "migrate down", "migrate version",
			"DATABASE_URL", "HTTP_ADDR", "API_TOKENS", "WEBHOOK_SECRET", "MIGRATE_ON_START"} {
			require.Contains(t, out.String(), want)
		}
	}
}

// A mistake on the command line exits 2 with the usage of the command it was made
// in on stderr, before the configuration is read.
func TestMistakesExit2WithTheirUsage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args  []string
		usage string
	}{
		{nil, usage},
		{[]string{"fly"}, usage},
		{[]string{"migrate"}, "Usage: logistics migrate <command>"},
		{[]string{"migrate", "sideways"}, "Usage: logistics migrate <command>"},
		{[]string{"serve", "now"}, "Usage: logistics serve\n"},
		{[]string{"serve", "--port=1"}, "Usage: logistics serve\n"},
		{[]string{"retention"}, "Usage: logistics retention <command>"},
		{[]string{"retention", "run", "--nope"}, "Usage: logistics retention run\n"},
		{[]string{"version", "1"}, "Usage: logistics version\n"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, nil, &stdout, &stderr)
		require.ErrorAs(t, err, new(*cli.UsageError), "%v", tc.args)
		require.Equal(t, 2, cli.Status("logistics", err, &stderr), "%v", tc.args)
		require.Empty(t, stdout.String(), "%v", tc.args)
		require.Contains(t, stderr.String(), "\n\n"+tc.usage, "%v", tc.args)
	}
}

// Every command answers --help, and help <command>, with its own usage on stdout,
// without the environment.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Parallel()
	for _, c := range binary(nil, io.Discard, io.Discard).Program().Commands {
		words := strings.Fields(c.Name)
		var out, again bytes.Buffer
		require.NoError(t, run(context.Background(), append(words, "--help"), nil, &out, io.Discard), c.Name)
		require.True(t, strings.HasPrefix(out.String(), "Usage: logistics "+c.Name+"\n\n"), out.String())
		require.NoError(t, run(context.Background(), append([]string{"help"}, words...), nil, &again, io.Discard))
		require.Equal(t, out.String(), again.String())
		require.Contains(t, usage, "  "+c.Name+" ", "logistics help lists %s", c.Name)
	}
}

func TestServeRefusesInvalidConfiguration(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"serve"}, env(nil), io.Discard, io.Discard)
	require.ErrorContains(t, err, "WEBHOOK_SECRET")
}

func TestMigrateUpDownVersion(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": pgtest.NewURL(t, "logistics", migrations.Logistics())}
	migrate := func(cmd string) string {
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), []string{"migrate", cmd}, env(vars), &out, io.Discard))
		return out.String()
	}
	require.Equal(t, "version 1 dirty false\n", migrate("version"))
	require.Equal(t, "version 0 dirty false\n", migrate("down"))
	require.Equal(t, "version 1 dirty false\n", migrate("up"))
}

// serve starts on an empty database, migrates it, answers, and returns nil once its
// context ends (what SIGINT and SIGTERM do through main).
func TestServeMigratesServesAndShutsDownCleanly(t *testing.T) {
	t.Parallel()
	addr := commandtest.FreeAddr(t)
	vars := map[string]string{
		"DATABASE_URL": pgtest.NewURL(t, "logistics", migrations.Logistics()), "HTTP_ADDR": addr,
		"WEBHOOK_SECRET": testSecret, "API_TOKENS": "warehouse:0123456789abcdef",
	}
	require.NoError(t, run(context.Background(), []string{"migrate", "down"}, env(vars), io.Discard, io.Discard))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, env(vars), io.Discard, io.Discard) }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond)

	inv := uuid.NewString()
	body := fmt.Appendf(nil, `{"id":%q,"type":"invoice.paid","occurred_at":"2025-03-01T12:00:00Z","sequence":2,`+
		`"data":{"invoice_id":%q,"invoice_number":"INV-000001","customer_id":"cust-42","currency":"EUR",`+
		`"total_minor":12000,"payment_id":"pay-1"}}`, uuid.NewString(), inv)
	req, err := http.NewRequest(http.MethodPost, base+"/webhooks/finance", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Idempotency-Key", "invoice.paid:"+inv+":pay-1")
	keys, err := webhook.ParseSecrets(testSecret)
	require.NoError(t, err)
	require.NoError(t, webhook.NewSigner(keys).SetHeaders(req.Header, "invoice.paid:"+inv+":pay-1", time.Now(), body))
	resp, err := client.Do(req)
	require.NoError(t, err)
	ack, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.JSONEq(t, `{"status":"ok","duplicate":false}`, string(ack))

	req, err = http.NewRequest(http.MethodGet, base+"/v1/shipments?invoice_id="+inv, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer 0123456789abcdef")
	resp, err = client.Do(req)
	require.NoError(t, err)
	list, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.Contains(string(list), `"state":"waiting"`), string(list))

	resp, err = client.Get(base + "/metrics")
	require.NoError(t, err)
	scraped, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	for _, series := range []string{`logistics_webhook_requests_total{status="200"} 1`,
		`logistics_webhook_duplicates_total 0`, `logistics_webhook_duration_seconds_count 1`} {
		require.Contains(t, string(scraped), series)
	}

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
}
