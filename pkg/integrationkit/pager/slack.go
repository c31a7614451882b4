package pager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"handoff/pkg/integrationkit/egress"
)

// SlackConfig says where Slack messages go: an incoming webhook URL, or a bot token
// with a channel. APIURL overrides Slack's API base for a bot token (tests point it at
// a local stand-in; it ends with a slash, like https://slack.com/api/).
type SlackConfig struct {
	WebhookURL string
	Token      string
	Channel    string
	APIURL     string
}

// Enabled reports whether any Slack target is configured.
func (c SlackConfig) Enabled() bool { return c.WebhookURL != "" || c.Token != "" }

// Validate reports an incomplete target, naming the missing field.
func (c SlackConfig) Validate() error {
	switch {
	case c.WebhookURL != "" && c.Token != "":
		return errors.New("pager: set either a Slack webhook URL or a token, not both")
	case c.Token != "" && c.Channel == "":
		return errors.New("pager: a Slack token needs a Channel")
	}
	return nil
}

// sendTimeout is the outer bound of one Slack request; the pager's SendTimeout
// (default 10 s) normally ends a Send first, through its context.
const sendTimeout = time.Minute

// NewSlackSender returns the Sender of c (nil when c names no target). Both targets
// post Block Kit (see blocks) with Message.Text as the plain fallback. It posts
// through egress.NewClient on guard (nil: egress's default policy, public
// destinations on 80 and 443 only), so a Slack URL on a refused address is never
// dialed and a redirect is never followed: both fail the Send, and the pager keeps
// the message for a retry. Link and media previews are turned off, so Slack fetches
// nothing a message names. Each Send is bounded by its context.
func NewSlackSender(c SlackConfig, guard *egress.Dialer) (Sender, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	client := egress.NewClient(guard, egress.ClientConfig{Timeout: sendTimeout})
	switch {
	case c.WebhookURL != "":
		return slackWebhook{url: c.WebhookURL, client: client}, nil
	case c.Token != "":
		opts := []slack.Option{slack.OptionHTTPClient(client)}
		if c.APIURL != "" {
			opts = append(opts, slack.OptionAPIURL(strings.TrimSuffix(c.APIURL, "/")+"/"))
		}
		return slackBot{api: slack.New(c.Token, opts...), channel: c.Channel}, nil
	}
	return nil, nil
}

// slackWebhook posts to an incoming webhook.
type slackWebhook struct {
	url    string
	client *http.Client
}

func (s slackWebhook) Send(ctx context.Context, m Message) error {
	off := false
	msg := &slack.WebhookMessage{Text: m.Text, Blocks: &slack.Blocks{BlockSet: blocks(m)},
		UnfurlLinks: &off, UnfurlMedia: &off}
	if err := slack.PostWebhookCustomHTTPContext(ctx, s.url, s.client, msg); err != nil {
		return fmt.Errorf("slack webhook: %w", err)
	}
	return nil
}

// slackBot posts with chat.postMessage as a bot.
type slackBot struct {
	api     *slack.Client
	channel string
}

func (s slackBot) Send(ctx context.Context, m Message) error {
	if _, _, err := s.api.PostMessageContext(ctx, s.channel, slack.MsgOptionText(m.Text, false),
		slack.MsgOptionBlocks(blocks(m)...),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()); err != nil {
		return fmt.Errorf("slack chat.postMessage: %w", err)
	}
	return nil
}

// LogSender "sends" a message by logging it: the target when no Slack is configured.
type LogSender struct{ Log *slog.Logger }

// Send logs m at error level and never fails.
func (l LogSender) Send(ctx context.Context, m Message) error {
	l.Log.ErrorContext(ctx, "page", "alert_key", m.Key, "kind", m.Kind, "count", m.Count, "text", m.Text)
	return nil
}
