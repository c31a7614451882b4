package deploy

import (
	"encoding/json"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/envconf"
)

// leftToDefaults are the variables a binary reads that compose.yaml deliberately leaves
// unset, each with the reason its built-in default (see `finance help`, `logistics
// help`) suits the containers too. Every other variable a binary reads must be set in
// compose.yaml, so a binary that starts reading a new one fails
// TestComposeSetsEveryVariableTheBinariesRead until someone decides its value here.
var leftToDefaults = map[string]map[string]string{
	"finance": withBothBinaries(map[string]string{
		"ALERT_GATHER":              "5s for an alert to count its companions before it pages",
		"ALERT_REPEAT":              "at most one message a minute per alert",
		"RETENTION_OUTBOX_AGE":      "delivered events are archived after 30 days",
		"RETENTION_ARCHIVE_AGE":     "the archive keeps a year",
		"RETENTION_IDEMPOTENCY_AGE": "Idempotency-Key records are kept 24 h (docs/contract.md)",
		"RECONCILE_SCHEDULE":        "reconciliation every 10 minutes",
		"RECONCILE_WINDOW":          "each run compares the last hour",
		"RECONCILE_OVERDUE":         "15 minutes past its next attempt is overdue",
		"LOGISTICS_API_URL":         "derived from LOGISTICS_WEBHOOK_URL: http://logistics:8082",
		"TRUSTED_PROXIES":           "no proxy stands in front of the published ports: forwarding headers are believed from no one",
		"DISPATCH_CONCURRENCY":      "its default follows DISPATCH_MODE (100 single, 2 batch); a fixed value would undo batch mode",
		"SLACK_TOKEN":               secretFromFile,
		"LOGISTICS_OPS_TOKEN":       secretFromFile,
	}),
	"logistics": withBothBinaries(map[string]string{
		"RETENTION_PROCESSED_AGE": "processed events are kept 90 days",
	}),
}

// withBothBinaries adds to one binary's leftToDefaults the variables both binaries
// read and compose.yaml leaves unset for both, for the same reasons.
func withBothBinaries(own map[string]string) map[string]string {
	both := map[string]string{
		"RETENTION_BATCH":                 "1000 rows per statement keeps locks short",
		"DATABASE_URL":                    secretFromFile,
		"API_TOKENS":                      secretFromFile,
		"WEBHOOK_SECRET":                  secretFromFile,
		"OTEL_EXPORTER_OTLP_ENDPOINT":     noCollector,
		"OTEL_EXPORTER_OTLP_HEADERS":      noCollector,
		"OTEL_EXPORTER_OTLP_HEADERS_FILE": noCollector,
		"OTEL_SERVICE_NAME":               noCollector,
		"OTEL_RESOURCE_ATTRIBUTES":        noCollector,
		"OTEL_BSP_SCHEDULE_DELAY":         noCollector,
	}
	maps.Copy(both, own)
	return both
}

// noCollector is why compose.yaml sets no OTEL_* variable: it runs no trace
// collector, so tracing stays off (docs/operations.md, Tracing, says how to add one).
const noCollector = "compose runs no trace collector: tracing stays off"

// secretFromFile is why compose.yaml sets no secret itself: its *_FILE names a
// mounted compose secret, and a binary refuses a variable set together with its
// *_FILE.
const secretFromFile = "its *_FILE names a compose secret; setting both is refused"

// helpVariable is one variable in the Environment section of a binary's help: a name
// at the start of a line indented by two spaces (descriptions are indented further).
var helpVariable = regexp.MustCompile(`(?m)^  ([A-Z][A-Z0-9_]*)\s`)

// helpVariables runs `<bin> help` with an empty environment and returns the variables
// it lists: what the binary reads (each cmd package tests that its help lists every
// variable its configuration reads).
func helpVariables(t *testing.T, bin string) []string {
	t.Helper()
	out := runBinary(t, bin, "help")
	_, section, ok := strings.Cut(string(out), "\nEnvironment:\n")
	require.True(t, ok, "%s help has an Environment section:\n%s", bin, out)
	var names []string
	for _, m := range helpVariable.FindAllStringSubmatch(section, -1) {
		names = append(names, m[1])
	}
	require.Contains(t, names, "DATABASE_URL", "the parse of %s help found its variables", bin)
	return names
}

func TestComposeSetsEveryVariableTheBinariesRead(t *testing.T) {
	t.Parallel()
	p := project(t)
	for service, bin := range binaryOf {
		read := helpVariables(t, bin)
		env := environment(t, p, service)
		for _, name := range read {
			_, set := env[name]
			if why, ok := leftToDefaults[bin][name]; ok {
				require.False(t, set, "%s: %s is set in compose.yaml and listed in leftToDefaults (%s): drop one", service, name, why)
				continue
			}
			require.True(t, set, "%s reads %s but compose.yaml does not set it for %s: set it there, "+
				"or add it to leftToDefaults with the reason its default suits containers", bin, name, service)
		}
	}
}

// declarations runs `<bin> help --json` with an empty environment: every variable the
// binary reads, with its default, bounds and whether it is a secret.
func declarations(t testing.TB, bin string) envconf.Program {
	t.Helper()
	out := runBinary(t, bin, "help", "--json")
	var p envconf.Program
	require.NoError(t, json.Unmarshal(out, &p), "%s", out)
	require.Equal(t, bin, p.Name)
	require.NotEmpty(t, p.Variables)
	return p
}
