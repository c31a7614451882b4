package problem_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/problem"
)

var (
	errMissing = errors.New("missing")
	errTaken   = errors.New("taken")
)

var table = problem.Table{
	problem.When(errMissing, http.StatusNotFound, "thing-not-found", "no thing has this id"),
	problem.When(errTaken, http.StatusConflict, "thing-taken", "the thing is taken"),
}

func TestTableMapsTheFirstMatchingRule(t *testing.T) {
	t.Parallel()
	other := errors.New("other")
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"nil stays nil", nil, nil},
		{"a known error", errMissing, problem.New(http.StatusNotFound, "thing-not-found", "no thing has this id")},
		{"a wrapped one", fmt.Errorf("load: %w", errTaken), problem.New(http.StatusConflict, "thing-taken", "the thing is taken")},
		{"the first rule of a joined one", errors.Join(errTaken, errMissing), problem.New(http.StatusNotFound, "thing-not-found", "no thing has this id")},
		{"an unknown one stays itself", other, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, table.Map(tc.err))
		})
	}
}

func TestTableMatchReturnsTheRule(t *testing.T) {
	t.Parallel()
	r, ok := table.Match(fmt.Errorf("wrapped: %w", errTaken))
	require.True(t, ok)
	require.Equal(t, http.StatusConflict, r.Status)
	require.Equal(t, "the thing is taken", r.Detail)
	_, ok = table.Match(errors.New("other"))
	require.False(t, ok)
}

func TestMapWithPassesAHandlersErrorsThroughTheMapping(t *testing.T) {
	t.Parallel()
	var passed []error
	mw := problem.MapWith(func(err error) error {
		passed = append(passed, err)
		return table.Map(err)
	})
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder())
	require.NoError(t, mw(func(echo.Context) error { return nil })(c))
	require.Empty(t, passed, "a nil error is not passed")
	got := mw(func(echo.Context) error { return fmt.Errorf("load: %w", errMissing) })(c)
	require.Equal(t, problem.New(http.StatusNotFound, "thing-not-found", "no thing has this id"), got)
	other := errors.New("other")
	require.Equal(t, other, mw(func(echo.Context) error { return other })(c))
	require.Len(t, passed, 2)
}

func TestInvalidFieldsListsADomainsFieldErrors(t *testing.T) {
	t.Parallel()
	type domainFieldError struct{ Field, Detail string }
	got := problem.InvalidFields("the request is not valid", []domainFieldError{
		{Field: "lines[0].quantity", Detail: "must be positive"},
		{Field: "currency", Detail: "must be three letters"},
	})
	require.Equal(t, problem.Invalid("the request is not valid",
		problem.FieldError{Field: "lines[0].quantity", Detail: "must be positive"},
		problem.FieldError{Field: "currency", Detail: "must be three letters"}), got)
	require.Equal(t, http.StatusBadRequest, got.Status)
}

func ExampleTable() {
	errNotFound := errors.New("invoice not found")
	answers := problem.Table{
		problem.When(errNotFound, http.StatusNotFound, "invoice-not-found", "no invoice has this id"),
	}
	p := problem.From(answers.Map(fmt.Errorf("load invoice: %w", errNotFound)))
	fmt.Println(p.Status, p.Type, p.Detail)
	// Output: 404 https://handoff.dev/problems/invoice-not-found no invoice has this id
}
