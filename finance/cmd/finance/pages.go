package main

import (
	"net/url"
	"strings"

	"github.com/google/uuid"

	"handoff/finance/internal/opsweb"
	"handoff/pkg/integrationkit/pager"
)

// runbooks names, for each kind of page finance sends, its section of
// docs/operations.md (checked against the headings there by a test).
var runbooks = map[string]string{
	pager.KindDeadLetter:           "docs/operations.md § 6 Runbook › Event dead-lettered",
	pager.KindCircuit + "opened":   "docs/operations.md § 6 Runbook › Circuit opened, re-opened, closed",
	pager.KindCircuit + "reopened": "docs/operations.md § 6 Runbook › Circuit opened, re-opened, closed",
	pager.KindCircuit + "closed":   "docs/operations.md § 6 Runbook › Circuit opened, re-opened, closed",
	pager.KindUnauthorized:         "docs/operations.md § 6 Runbook › Deliveries refused with 401/403 (secret or clock)",
	pager.KindPendingAge:           "docs/operations.md § 6 Runbook › Oldest pending event too old",
	"reconcile_missing":            "docs/operations.md § 6 Runbook › Reconciliation discrepancy",
	"reconcile_unknown":            "docs/operations.md § 6 Runbook › Reconciliation discrepancy",
	"reconcile_overdue":            "docs/operations.md § 6 Runbook › Reconciliation discrepancy",
	"reconcile_failed":             "docs/operations.md § 6 Runbook › Reconciliation discrepancy",
}

// pageLinks are the dashboard pages a page about s links to: the event, its
// invoice's trace and events, and the failed events. The pager resolves them against
// DASHBOARD_URL; the event id is a parsed UUID and the aggregate key is escaped.
func pageLinks(s pager.Subject) []pager.Link {
	var out []pager.Link
	if s.EventID != uuid.Nil {
		out = append(out, pager.Link{Label: "Event", Path: relative(opsweb.EventPath(s.EventID))})
	}
	if s.Aggregate != "" {
		out = append(out,
			pager.Link{Label: "Invoice trace", Path: relative(opsweb.TracePath(s.Aggregate))},
			pager.Link{Label: "Invoice's events", Path: relative(opsweb.EventsPath(url.Values{"invoice": {s.Aggregate}}))})
	}
	if s.Kind == pager.KindDeadLetter {
		out = append(out, pager.Link{Label: "All failed events",
			Path: relative(opsweb.EventsPath(url.Values{"status": {"failed"}}))})
	}
	return out
}

// relative is a dashboard path relative to the dashboard's root (DASHBOARD_URL).
func relative(path string) string { return strings.TrimPrefix(path, opsweb.BasePath) }
