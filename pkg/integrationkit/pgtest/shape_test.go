package pgtest_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"handoff/pkg/integrationkit/pgtest"
)

// recorder keeps what MatchDDL reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

const kitDDL = `CREATE TABLE things (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name  text NOT NULL UNIQUE,
    state text NOT NULL DEFAULT 'new' CHECK (state IN ('new', 'old'))
) WITH (fillfactor = 80);
CREATE INDEX things_new_idx ON things (id) WHERE state = 'new';`

func TestMatchDDLAcceptsTheSameShapeUnderOtherIndexNames(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t, "shapesame", fstest.MapFS{"000001_things.up.sql": {Data: []byte(
		strings.ReplaceAll(kitDDL, "things_new_idx", "things_fresh_idx") +
			`ALTER TABLE things ADD COLUMN note text; CREATE INDEX things_note_idx ON things (note);`)}})
	pgtest.MatchDDL(t, db, kitDDL, map[string]pgtest.Extra{
		"things": {Columns: []string{"note"}, Indexes: []string{"things_note_idx"}},
	})
}

func TestMatchDDLListsEveryDifference(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t, "shapediff", fstest.MapFS{"000001_things.up.sql": {Data: []byte(`
CREATE TABLE things (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name  text NOT NULL,
    state text NOT NULL DEFAULT 'old' CHECK (state IN ('new', 'old')),
    note  text
);
CREATE INDEX things_new_idx ON things (id);`)}})
	r := &recorder{TB: t}
	pgtest.MatchDDL(r, db, kitDDL, map[string]pgtest.Extra{"things": {Indexes: []string{"things_gone_idx"}}})
	if len(r.errs) != 1 {
		t.Fatalf("want one report, got %q", r.errs)
	}
	for _, want := range []string{
		"things differs from the kit's DDL:",
		"only in the kit's DDL:   column state text NOT NULL DEFAULT 'new'::text",
		"only in the kit's DDL:   constraint UNIQUE (name)",
		"only in the kit's DDL:   index USING btree (id) WHERE (state = 'new'::text)",
		"only in the kit's DDL:   storage fillfactor=80",
		"only in the migrations: column state text NOT NULL DEFAULT 'old'::text (state)",
		"only in the migrations: column note text (note)",
		"only in the migrations: index USING btree (id) (things_new_idx)",
		"allowed but absent:     things_gone_idx",
	} {
		if !strings.Contains(r.errs[0], want) {
			t.Errorf("report lacks %q:\n%s", want, r.errs[0])
		}
	}
}
