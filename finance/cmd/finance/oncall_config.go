package main

import (
	"net/url"
	"time"

	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/pager"
	"handoff/pkg/integrationkit/schedule"
)

// oncallConfig is what paging, metrics, retention and reconciliation read.
type oncallConfig struct {
	Slack        pager.SlackConfig
	DashboardURL string
	PendingAge   time.Duration
	AlertGather  time.Duration
	AlertRepeat  time.Duration
	Retention    retentionConfig
	Reconcile    reconcileConfig
}

// retentionConfig is the retention windows.
type retentionConfig struct {
	Schedule       string
	OutboxAge      time.Duration
	ArchiveAge     time.Duration
	IdempotencyAge time.Duration
	Batch          int
}

// reconcileConfig says when and against what finance reconciles its deliveries.
type reconcileConfig struct {
	Schedule     string
	Window       time.Duration
	Overdue      time.Duration
	LogisticsURL string
	OpsToken     string
}

const day = 24 * time.Hour

// parseOncall reads the on-call variables; webhookURL gives LOGISTICS_API_URL its
// default (the same scheme and host).
func parseOncall(env *envconf.Env, httpAddr, webhookURL string) oncallConfig {
	c := oncallConfig{
		Slack: pager.SlackConfig{
			WebhookURL: env.String("SLACK_WEBHOOK_URL", ""),
			Token:      env.String("SLACK_TOKEN", ""),
			Channel:    env.String("SLACK_CHANNEL", ""),
			APIURL:     env.String("SLACK_API_URL", ""),
		},
		DashboardURL: env.String("DASHBOARD_URL", "http://"+httpAddr+"/ops/"),
		PendingAge:   env.Duration("ALERT_PENDING_AGE", 5*time.Minute),
		AlertGather:  env.Duration("ALERT_GATHER", 5*time.Second),
		AlertRepeat:  env.Duration("ALERT_REPEAT", time.Minute),
		Retention: retentionConfig{
			Schedule:       env.String("RETENTION_SCHEDULE", "0 3 * * *"),
			OutboxAge:      env.Duration("RETENTION_OUTBOX_AGE", 30*day),
			ArchiveAge:     env.Duration("RETENTION_ARCHIVE_AGE", 365*day),
			IdempotencyAge: env.Duration("RETENTION_IDEMPOTENCY_AGE", idempotency.DefaultTTL),
			Batch:          env.Int("RETENTION_BATCH", 1000),
		},
		Reconcile: reconcileConfig{
			Schedule:     env.String("RECONCILE_SCHEDULE", "@every 10m"),
			Window:       env.Duration("RECONCILE_WINDOW", time.Hour),
			Overdue:      env.Duration("RECONCILE_OVERDUE", 15*time.Minute),
			LogisticsURL: env.String("LOGISTICS_API_URL", origin(webhookURL)),
			OpsToken:     env.String("LOGISTICS_OPS_TOKEN", ""),
		},
	}
	c.validate(env)
	return c
}

func (c oncallConfig) validate(env *envconf.Env) {
	for name, v := range map[string]string{"SLACK_WEBHOOK_URL": c.Slack.WebhookURL, "SLACK_API_URL": c.Slack.APIURL,
		"DASHBOARD_URL": c.DashboardURL, "LOGISTICS_API_URL": c.Reconcile.LogisticsURL} {
		if v != "" && origin(v) == "" {
			env.Fail(name, "want an absolute http(s) URL, got %q", v)
		}
	}
	switch {
	case c.Slack.WebhookURL != "" && c.Slack.Token != "":
		env.Fail("SLACK_TOKEN", "set SLACK_WEBHOOK_URL or SLACK_TOKEN, not both")
	case c.Slack.Token != "" && c.Slack.Channel == "":
		env.Fail("SLACK_CHANNEL", "required with SLACK_TOKEN")
	}
	for name, spec := range map[string]string{"RETENTION_SCHEDULE": c.Retention.Schedule, "RECONCILE_SCHEDULE": c.Reconcile.Schedule} {
		if err := schedule.Validate(spec); err != nil {
			env.Fail(name, "want a cron spec such as \"0 3 * * *\" or \"@every 10m\", got %q", spec)
		}
	}
	if c.Retention.IdempotencyAge < idempotency.DefaultTTL {
		env.Fail("RETENTION_IDEMPOTENCY_AGE", "must be at least %s, how long the API honours a key", idempotency.DefaultTTL)
	}
}

// origin returns the scheme and host of an absolute http(s) URL, or "".
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
