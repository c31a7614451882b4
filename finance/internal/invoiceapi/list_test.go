package invoiceapi_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

type listOut struct {
	Items      []invoiceOut `json:"items"`
	NextCursor string       `json:"next_cursor"`
}

func (b *bundle) list(t *testing.T, query url.Values) listOut {
	t.Helper()
	rec := b.do(t, http.MethodGet, "/v1/invoices?"+query.Encode(), "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return decode[listOut](t, rec.Body)
}

func TestListPagesNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var issued []string // numbers, oldest first
	for _, customer := range []string{"cust-a", "cust-b", "cust-a", "cust-a", "cust-b"} {
		issued = append(issued, b.issue(t, customer, 100).Number)
	}

	var seen []string
	query := url.Values{"limit": {"2"}}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5, "pagination does not end")
		page := b.list(t, query)
		require.LessOrEqual(t, len(page.Items), 2)
		for _, inv := range page.Items {
			seen = append(seen, inv.Number)
			require.Len(t, inv.Lines, 0)
		}
		if page.NextCursor == "" {
			break
		}
		query.Set("cursor", page.NextCursor)
	}
	require.Equal(t, []string{issued[4], issued[3], issued[2], issued[1], issued[0]}, seen)

	all := b.list(t, url.Values{})
	require.Len(t, all.Items, 5)
	require.Empty(t, all.NextCursor, "the last page has no cursor")
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a1 := b.issue(t, "cust-a", 100)
	b.issue(t, "cust-b", 100)
	a2 := b.issue(t, "cust-a", 100)
	require.Equal(t, http.StatusCreated, b.pay(t, a1.ID, "pay-1", 100).Code)

	byCustomer := b.list(t, url.Values{"customer_id": {"cust-a"}})
	require.Len(t, byCustomer.Items, 2)
	require.Equal(t, a2.ID, byCustomer.Items[0].ID)
	require.Equal(t, a1.ID, byCustomer.Items[1].ID)
	require.Equal(t, byCustomer, b.list(t, url.Values{"customer": {"cust-a"}}), "customer, the former name, still reads")
	require.Equal(t, byCustomer, b.list(t, url.Values{"customer": {"cust-a"}, "customer_id": {"cust-a"}}))

	paid := b.list(t, url.Values{"status": {"paid"}})
	require.Len(t, paid.Items, 1)
	require.Equal(t, a1.ID, paid.Items[0].ID)
	require.Equal(t, "paid", paid.Items[0].Status)

	issued := b.list(t, url.Values{"status": {"issued"}, "customer": {"cust-a"}})
	require.Len(t, issued.Items, 1)
	require.Equal(t, a2.ID, issued.Items[0].ID)

	first := b.list(t, url.Values{"customer": {"cust-a"}, "limit": {"1"}})
	require.Len(t, first.Items, 1)
	require.Equal(t, a2.ID, first.Items[0].ID)
	require.NotEmpty(t, first.NextCursor)
	rest := b.list(t, url.Values{"customer": {"cust-a"}, "limit": {"1"}, "cursor": {first.NextCursor}})
	require.Len(t, rest.Items, 1)
	require.Equal(t, a1.ID, rest.Items[0].ID)
	require.Empty(t, rest.NextCursor)
}

func TestListRefusesBadQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, query := range map[string]url.Values{
		"limit zero":         {"limit": {"0"}},
		"limit over max":     {"limit": {"501"}},
		"two customers":      {"customer_id": {"cust-1"}, "customer": {"cust-2"}},
		"limit not a number": {"limit": {"ten"}},
		"unknown status":     {"status": {"open"}},
		"cursor not base64":  {"cursor": {"%%%"}},
		"cursor forged":      {"cursor": {base64.RawURLEncoding.EncodeToString([]byte("v1:-5"))}},
		"cursor other form":  {"cursor": {base64.RawURLEncoding.EncodeToString([]byte("42"))}},
		"customer too long":  {"customer": {string(make([]byte, 101))}},
	} {
		t.Run(name, func(t *testing.T) {
			rec := b.do(t, http.MethodGet, "/v1/invoices?"+query.Encode(), "")
			requireProblem(t, rec, http.StatusBadRequest, "validation-failed")
		})
	}
	require.Len(t, b.list(t, url.Values{"limit": {"200"}}).Items, 0)
}
