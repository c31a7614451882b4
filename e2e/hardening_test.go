package e2e_test

import (
	"cmp"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// trickle opens a connection to addr and sends a request head one byte every
// interval, as a slow-loris attacker does, until stop closes or the server hangs up.
func trickle(t *testing.T, addr string, interval time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	wg.Go(func() {
		hungUp := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, conn); close(hungUp) }()
		defer func() { _ = conn.Close(); <-hungUp }()
		head := []byte("POST /webhooks/finance HTTP/1.1\r\nHost: logistics\r\nX-Padding: ")
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-hungUp:
				return
			case <-stop:
				return
			case <-tick.C:
				_, _ = conn.Write([]byte{head[min(i, len(head)-1)]})
			}
		}
	})
}

// 200 slow-loris connections held open against the real logistics binary do not stop
// signed webhooks from being answered within a second.
func TestSlowLorisDoesNotStopTheWebhook(t *testing.T) {
	t.Parallel()
	env := withoutDispatch(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for range 200 {
		trickle(t, env.Logistics.Addr, 100*time.Millisecond, stop, &wg)
	}
	for range 10 {
		key, body := paidEvent(uuid.NewString(), 2)
		start := time.Now()
		r := harness.Call(t, http.MethodPost, env.Logistics.URL+"/webhooks/finance", "", body, signed(key, body)...)
		elapsed := time.Since(start)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		require.Less(t, elapsed, time.Second, "answered within the budget")
	}
}

// No secret (bearer tokens, a rejected token, the webhook secret, the database
// password) appears in any log line of either service, at debug level, across a
// delivery, refused requests and a replica started with a password in DATABASE_URL.
func TestSecretsNeverReachTheLogs(t *testing.T) {
	t.Parallel()
	const dbPassword, wrongToken = "pg-password-e2e-7f3a9c", "wrong-token-e2e-5b8d1e0a"
	env := harness.New(t, harness.Options{})
	replica := env.NewFinance(t, map[string]string{
		"DATABASE_URL": withPassword(t, env.FinanceDB, dbPassword), "DISPATCH_ENABLED": "false",
	})
	replica.Start(t)

	inv := issue(t, env, "cust-secrets")
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-secrets").Status)
	waitForShipment(t, env, inv, "waiting", 10*time.Second)
	refused := []struct {
		url, token string
		status     int
	}{
		{env.Finance.URL + "/v1/invoices/" + inv.ID, wrongToken, http.StatusUnauthorized},
		{replica.URL + "/v1/invoices/" + inv.ID, harness.WarehouseToken, http.StatusForbidden},
		{env.Logistics.URL + "/v1/shipments", harness.ClerkToken, http.StatusForbidden},
		{env.Logistics.URL + "/v1/shipments", wrongToken, http.StatusUnauthorized},
	}
	for _, r := range refused {
		require.Equal(t, r.status, harness.Call(t, http.MethodGet, r.url, r.token, nil).Status, r.url)
	}
	key, body := paidEvent(uuid.NewString(), 2)
	bad := harness.Call(t, http.MethodPost, env.Logistics.URL+"/webhooks/finance", "", body,
		"X-Idempotency-Key", key, "webhook-id", "msg_x", "webhook-timestamp", "1", "webhook-signature", "v1,AAAA")
	require.Equal(t, http.StatusUnauthorized, bad.Status)

	for _, svc := range []*harness.Service{env.Finance, replica, env.Logistics} {
		svc.Stop(t) // flush everything the process had to say
	}
	secrets := []string{harness.ClerkToken, harness.OpsToken, harness.WarehouseToken, wrongToken, dbPassword,
		string(harness.SecretKey), base64.StdEncoding.EncodeToString(harness.SecretKey), "whsec_"}
	for name, log := range map[string]string{"finance": env.Finance.Log(), "replica": replica.Log(), "logistics": env.Logistics.Log()} {
		require.Contains(t, log, `"http request"`, "%s logged its requests", name)
		for _, secret := range secrets {
			require.NotContains(t, log, secret, "%s log leaks a secret", name)
		}
	}
}

// withPassword returns the database URL raw with password set (trust auth ignores it).
func withPassword(t *testing.T, raw, password string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.UserPassword(cmp.Or(u.User.Username(), "postgres"), password)
	return u.String()
}
