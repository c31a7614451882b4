package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/pager"
)

// Every runbook a page names is a heading of docs/operations.md's runbook.
func TestRunbooksNameHeadingsOfTheOperationsGuide(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/operations.md")
	require.NoError(t, err)
	runbook, _, ok := strings.Cut(string(doc)[strings.Index(string(doc), "## 6. Runbook"):], "\n## 7.")
	require.True(t, ok)
	for kind, section := range runbooks {
		heading, ok := strings.CutPrefix(section, "docs/operations.md § 6 Runbook › ")
		require.True(t, ok, kind)
		require.Contains(t, runbook, "\n### "+heading+"\n", kind)
	}
}

// A dead letter's page links to its event, its invoice and the failed events, by
// paths under the dashboard with the invoice escaped.
func TestPageLinks(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	links := pageLinks(pager.Subject{Kind: pager.KindDeadLetter, EventID: id, Aggregate: "a/b"})
	require.Equal(t, []pager.Link{
		{Label: "Event", Path: "events/" + id.String()},
		{Label: "Invoice trace", Path: "invoices/a%2Fb"},
		{Label: "Invoice's events", Path: "events?invoice=a%2Fb"},
		{Label: "All failed events", Path: "events?status=failed"},
	}, links)
	require.Empty(t, pageLinks(pager.Subject{Kind: "circuit_opened"}))
}
