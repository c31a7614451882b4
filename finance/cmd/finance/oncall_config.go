package main

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"handoff/pkg/integrationkit/auth"
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

// retentionConfig is how long finance keeps what it delivered.
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

// settings declares the on-call variables, storing into c. The defaults of
// DASHBOARD_URL and LOGISTICS_API_URL come from httpAddr and webhookURL, parsed
// before them.
func (c *oncallConfig) settings(httpAddr, webhookURL *string) ([]envconf.Setting, []envconf.Rule) {
	dashboard := envconf.String(&c.DashboardURL, "DASHBOARD_URL", "http://<HTTP_ADDR>/ops/",
		"linked from every page; the dashboard answers only its host and takes a POST only "+
			"from its origin (a loopback or unspecified host admits any loopback host)", envconf.HTTPURL)
	dashboard.DefaultFrom = func() string { return "http://" + *httpAddr + "/ops/" }
	logistics := envconf.String(&c.Reconcile.LogisticsURL, "LOGISTICS_API_URL",
		"scheme and host of LOGISTICS_WEBHOOK_URL", "logistics' base URL for its ops API", envconf.HTTPURL)
	logistics.DefaultFrom = func() string { return origin(*webhookURL) }
	slackAPI := envconf.String(&c.Slack.APIURL, "SLACK_API_URL", "https://slack.com/api/",
		"Slack Web API base for SLACK_TOKEN", envconf.HTTPURL)
	slackAPI.DefaultFrom = func() string { return "" } // unset: the Slack client's own base, named above
	r := &c.Retention
	settings := []envconf.Setting{
		envconf.String(&c.Slack.WebhookURL, "SLACK_WEBHOOK_URL", "",
			"Slack incoming webhook that pages on-call; with neither it nor SLACK_TOKEN, alerts are only logged", envconf.HTTPURL),
		envconf.Secret(envconf.String(&c.Slack.Token, "SLACK_TOKEN", "",
			"Slack bot token that pages on-call in SLACK_CHANNEL, instead of SLACK_WEBHOOK_URL", nil)),
		envconf.String(&c.Slack.Channel, "SLACK_CHANNEL", "", "the channel SLACK_TOKEN posts to", nil),
		slackAPI,
		dashboard,
		envconf.Duration(&c.PendingAge, "ALERT_PENDING_AGE", 5*time.Minute, 10*time.Second,
			"page when the oldest pending event is older"),
		envconf.Duration(&c.AlertGather, "ALERT_GATHER", 5*time.Second, 100*time.Millisecond,
			"a new alert waits this long to count its companions"),
		envconf.Duration(&c.AlertRepeat, "ALERT_REPEAT", time.Minute, time.Second,
			"least time between two messages of one alert"),
		envconf.String(&r.Schedule, "RETENTION_SCHEDULE", "0 3 * * *", "cron spec of the retention run", checkSchedule),
		envconf.Duration(&r.OutboxAge, "RETENTION_OUTBOX_AGE", 30*day, time.Hour,
			"delivered events move to the archive after"),
		envconf.Duration(&r.ArchiveAge, "RETENTION_ARCHIVE_AGE", 365*day, time.Hour,
			"archived events are deleted after; at least RETENTION_OUTBOX_AGE"),
		envconf.Duration(&r.IdempotencyAge, "RETENTION_IDEMPOTENCY_AGE", idempotency.DefaultTTL, idempotency.DefaultTTL,
			"Idempotency-Key records are deleted after; the API honours a key this long"),
		envconf.Int(&r.Batch, "RETENTION_BATCH", 1000, 1, 0, "rows per retention statement"),
		envconf.String(&c.Reconcile.Schedule, "RECONCILE_SCHEDULE", "@every 10m",
			"cron spec of reconciliation with logistics", checkSchedule),
		envconf.Duration(&c.Reconcile.Window, "RECONCILE_WINDOW", time.Hour, time.Minute,
			"trailing window each scheduled run compares; at most RETENTION_ARCHIVE_AGE"),
		envconf.Duration(&c.Reconcile.Overdue, "RECONCILE_OVERDUE", 15*time.Minute, 10*time.Second,
			"a pending event this late past its next attempt is reported"),
		logistics,
		envconf.Required(envconf.Secret(envconf.String(&c.Reconcile.OpsToken, "LOGISTICS_OPS_TOKEN", "",
			"ops token of logistics; unset turns scheduled reconciliation off and the "+
				"invoice trace shows \"logistics record unavailable\"", auth.CheckToken)), "reconcile"),
	}
	return settings, c.rules()
}

// rules are the on-call checks across variables.
func (c *oncallConfig) rules() []envconf.Rule {
	r := &c.Retention
	return []envconf.Rule{
		{Name: "SLACK_TOKEN", Uses: []string{"SLACK_WEBHOOK_URL"}, Check: func() error {
			if c.Slack.WebhookURL != "" && c.Slack.Token != "" {
				return errors.New("set SLACK_WEBHOOK_URL or SLACK_TOKEN, not both")
			}
			return nil
		}},
		{Name: "SLACK_CHANNEL", Uses: []string{"SLACK_TOKEN"}, Check: func() error {
			if c.Slack.Token != "" && c.Slack.Channel == "" {
				return errors.New("required with SLACK_TOKEN")
			}
			return nil
		}},
		// Archived at RETENTION_OUTBOX_AGE and deleted before: the archive would be
		// emptied as soon as it is filled.
		{Name: "RETENTION_ARCHIVE_AGE", Uses: []string{"RETENTION_OUTBOX_AGE"}, Check: func() error {
			if r.ArchiveAge < r.OutboxAge {
				return fmt.Errorf("%s is below RETENTION_OUTBOX_AGE (%s): events would be deleted as they are archived",
					envconf.FormatDuration(r.ArchiveAge), envconf.FormatDuration(r.OutboxAge))
			}
			return nil
		}},
		// Reconciliation compares finance's deliveries, the archive included, with
		// logistics: past RETENTION_ARCHIVE_AGE finance has deleted them, and every one
		// would be reported as unknown to finance.
		{Name: "RECONCILE_WINDOW", Uses: []string{"RETENTION_ARCHIVE_AGE"}, Check: func() error {
			if c.Reconcile.Window > r.ArchiveAge {
				return fmt.Errorf("%s exceeds RETENTION_ARCHIVE_AGE (%s): deleted events would be reported",
					envconf.FormatDuration(c.Reconcile.Window), envconf.FormatDuration(r.ArchiveAge))
			}
			return nil
		}},
	}
}

// checkSchedule admits a cron spec.
func checkSchedule(spec string) error {
	if schedule.Validate(spec) != nil {
		return fmt.Errorf("want a cron spec such as \"0 3 * * *\" or \"@every 10m\", got %q", spec)
	}
	return nil
}

// origin returns the scheme and host of an absolute http(s) URL, or "".
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
