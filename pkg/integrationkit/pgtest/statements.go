package pgtest

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Recorder keeps the text of every statement a database handle from OpenRecorded
// sends, bun's, pgdb.Prepared's and those of a pgx batch alike: what a test compares
// with a copy of them.
type Recorder struct {
	mu   sync.Mutex
	sqls []string
}

// record keeps one statement's text.
func (r *Recorder) record(sql string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sqls = append(r.sqls, sql)
}

// TraceQueryStart records data.SQL; it implements pgx.QueryTracer.
func (r *Recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.record(data.SQL)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (*Recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (*Recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery records data.SQL, a statement of a batch; it implements
// pgx.BatchTracer.
func (r *Recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	r.record(data.SQL)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (*Recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Take returns the statements recorded since the last Take, in order, and forgets them.
func (r *Recorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sqls
	r.sqls = nil
	return out
}

// OpenRecorded opens a bun database on url (one of NewURL) whose statements the
// returned Recorder keeps. It is closed when the test ends.
func OpenRecorded(t testing.TB, url string) (*bun.DB, *Recorder) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: parse url: %v", err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec // as pgdb.Open does
	rec := &Recorder{}
	cfg.Tracer = rec
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(MaxConns)
	db := bun.NewDB(sqldb, pgdialect.New())
	t.Cleanup(func() { _ = db.Close() })
	return db, rec
}

var (
	sqlQuoted  = regexp.MustCompile(`'(?:[^']|'')*'`)
	sqlParam   = regexp.MustCompile(`\$\d+`)
	sqlNumber  = regexp.MustCompile(`\b\d+\b`)
	sqlCast    = regexp.MustCompile(`::[a-z]+(\[\])?`)
	sqlSpace   = regexp.MustCompile(`\s+`)
	sqlAround  = regexp.MustCompile(` ?([(),=]) ?`)
	sqlIdentQt = strings.NewReplacer(`"`, ``)
)

// NormalizeSQL reduces a statement to what a hand-written copy of it must keep: its
// words, tables, columns, clauses and their order. Values do not count: a literal, a
// number and a $n parameter all become ?, casts and identifier quotes are dropped,
// white space and case are folded. Two statements that normalize alike do the same
// work for any values.
func NormalizeSQL(s string) string {
	s = sqlQuoted.ReplaceAllString(s, "?")
	s = sqlParam.ReplaceAllString(s, "?")
	s = strings.ToLower(sqlIdentQt.Replace(s))
	s = sqlCast.ReplaceAllString(s, "")
	s = sqlNumber.ReplaceAllString(s, "?")
	s = sqlSpace.ReplaceAllString(s, " ")
	s = sqlAround.ReplaceAllString(s, "$1")
	return strings.TrimSpace(s)
}

// StringConsts returns the string constants declared in the Go file at path, by
// name: a test reads statements another module keeps, without importing it.
func StringConsts(t testing.TB, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", path, err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			if i >= len(spec.Values) {
				break
			}
			if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil {
					out[name.Name] = v
				}
			}
		}
		return true
	})
	return out
}
