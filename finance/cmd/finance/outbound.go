package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"time"

	"handoff/pkg/integrationkit/egress"
)

// newGuard is the SSRF guard of every call finance makes: deliveries, Slack pages,
// reconciliation and the invoice trace. Each client is egress.NewClient on it, so
// OUTBOUND_ALLOW is the only list of internal destinations finance may reach.
func newGuard(cfg config) *egress.Dialer {
	return egress.New(egress.Config{Allow: cfg.OutboundAllow})
}

// outbound is one configured destination: the variable that names it, its URL, and
// what fails while the guard refuses it.
type outbound struct {
	name, url, consequence string
}

// outbounds are the destinations finance will call with cfg.
func outbounds(cfg config) []outbound {
	var out []outbound
	if cfg.DispatchOn {
		out = append(out, outbound{"LOGISTICS_WEBHOOK_URL", cfg.WebhookURL,
			"every event will be dead-lettered as blocked_destination"})
	}
	if s := cfg.Oncall.Slack; s.WebhookURL != "" {
		out = append(out, outbound{"SLACK_WEBHOOK_URL", s.WebhookURL, "no page reaches Slack (each is kept and retried)"})
	} else if s.Token != "" && s.APIURL != "" {
		out = append(out, outbound{"SLACK_API_URL", s.APIURL, "no page reaches Slack (each is kept and retried)"})
	}
	if r := cfg.Oncall.Reconcile; r.OpsToken != "" {
		out = append(out, outbound{"LOGISTICS_API_URL", r.LogisticsURL,
			"reconciliation and the invoice trace fail as blocked"})
	}
	return out
}

// warnRefused says at start, not as failures later, which configured destinations
// the guard refuses (on a private network and not in OUTBOUND_ALLOW), naming each
// variable. finance starts anyway: the calls fail as blocked, and a restart with a
// corrected OUTBOUND_ALLOW fixes them.
func warnRefused(guard *egress.Dialer, cfg config, log *slog.Logger) {
	for _, o := range outbounds(cfg) {
		err := admits(guard, o.url)
		var blocked *egress.BlockedError
		if errors.As(err, &blocked) {
			log.Warn(o.name+" is refused by the SSRF guard: "+o.consequence+" until OUTBOUND_ALLOW admits it",
				"variable", o.name, "destination", o.url, "err", err)
		}
	}
}

// admits is the guard's verdict on the host and port of raw, without dialing; an
// unparsable URL is left to the configuration's own checks.
func admits(guard *egress.Dialer, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return guard.Admits(ctx, net.JoinHostPort(u.Hostname(), port))
}
