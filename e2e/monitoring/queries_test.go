package monitoring

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository root, found from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	rulesFile     = filepath.Join("deploy", "prometheus", "alerts.yaml")
	dashboardFile = filepath.Join("deploy", "grafana", "handoff.json")
	runbookFile   = filepath.Join("docs", "operations.md")
)

// promql parses PromQL as Prometheus does by default.
var promql = parser.NewParser(parser.Options{})

// use is one metric name and where a query uses it.
type use struct{ name, where string }

// metricNames returns the metric names that expr selects. A selector without a literal
// name ({__name__=~"…"}) is an error: no check could hold it to what is exported.
func metricNames(expr, where string) ([]use, error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var uses []use
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				err = fmt.Errorf("%s: selector %s names no metric", where, vs)
			}
			uses = append(uses, use{vs.Name, where})
		}
		return nil
	})
	return uses, err
}

// alertRules parses the rules file as Prometheus loads it: unknown fields refused,
// every expression and annotation template checked.
func alertRules(t *testing.T) []rulefmt.Rule {
	t.Helper()
	groups, errs := rulefmt.ParseFile(filepath.Join(repoRoot(), rulesFile), false, model.LegacyValidation,
		promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "%s does not load", rulesFile)
	var rules []rulefmt.Rule
	for _, g := range groups.Groups {
		rules = append(rules, g.Rules...)
	}
	require.NotEmpty(t, rules)
	return rules
}

// ruleMetrics returns the metric names every rule uses.
func ruleMetrics(t *testing.T) []use {
	t.Helper()
	var uses []use
	for _, r := range alertRules(t) {
		u, err := metricNames(r.Expr, rulesFile+" "+r.Alert)
		require.NoError(t, err)
		uses = append(uses, u...)
	}
	return uses
}

// grafanaVariable matches Grafana's interval variables, which Grafana replaces with a
// duration before the query reaches Prometheus.
var grafanaVariable = regexp.MustCompile(`\$__(rate_interval|interval|range)\b`)

// dashboardPanel is the part of a Grafana panel the checks read; a row holds its
// panels when it is collapsed.
type dashboardPanel struct {
	Type    string           `json:"type"`
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboardMetrics returns the metric names the dashboard's queries use, failing on a
// query that does not parse or a panel without one.
func dashboardMetrics(t *testing.T) []use {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), dashboardFile))
	require.NoError(t, err)
	var dash struct {
		UID    string           `json:"uid"`
		Panels []dashboardPanel `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &dash), dashboardFile)
	require.NotEmpty(t, dash.UID, "a stable uid keeps links to the dashboard working")
	var uses []use
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			require.NotEmpty(t, p.Targets, "%s: panel %q has no query", dashboardFile, p.Title)
			for _, tg := range p.Targets {
				u, err := metricNames(grafanaVariable.ReplaceAllString(tg.Expr, "5m"), fmt.Sprintf("%s panel %q", dashboardFile, p.Title))
				require.NoError(t, err)
				uses = append(uses, u...)
			}
		}
	}
	walk(dash.Panels)
	require.NotEmpty(t, uses)
	return uses
}

// runbookAnchors are the GitHub anchors of the headings of docs/operations.md.
func runbookAnchors(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), runbookFile))
	require.NoError(t, err)
	var anchors []string
	for line := range strings.Lines(string(b)) {
		if heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			anchors = append(anchors, slug(strings.TrimSpace(heading)))
		}
	}
	return anchors
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as
// hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every rule is an alert with a severity, a summary and a runbook link to a section
// that exists; every expression of the rules and of the dashboard parses.
func TestAlertRulesAndDashboardParse(t *testing.T) {
	t.Parallel()
	anchors := runbookAnchors(t)
	require.Contains(t, anchors, "event-dead-lettered", "slug agrees with GitHub's anchors")
	for _, r := range alertRules(t) {
		require.NotEmpty(t, r.Alert, "%s: recording rule %q: this file holds alerts only", rulesFile, r.Record)
		require.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], "%s: severity", r.Alert)
		require.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], "docs/operations.md#")
		require.True(t, ok, "%s: runbook_url %q is not a section of %s", r.Alert, r.Annotations["runbook_url"], runbookFile)
		require.True(t, slices.Contains(anchors, anchor), "%s: %s has no section #%s", r.Alert, runbookFile, anchor)
	}
	require.NotEmpty(t, ruleMetrics(t))
	require.NotEmpty(t, dashboardMetrics(t))
}
