package envconf

import (
	"regexp"
	"strings"
)

// Markdown renders the variables of several programs as one Markdown table with the
// columns variable, read by, default and meaning, in the order the variables are
// first declared. A variable several programs read is one row: its default and its
// meaning appear once where the programs agree, else each program's, named. Names of
// the programs' variables in the text are set as code.
func Markdown(programs ...Program) string {
	type decl struct {
		program string
		v       Variable
	}
	var order []string
	decls := map[string][]decl{}
	known := map[string]bool{}
	for _, p := range programs {
		for _, v := range p.Variables {
			if _, seen := decls[v.Name]; !seen {
				order = append(order, v.Name)
			}
			decls[v.Name] = append(decls[v.Name], decl{p.Name, v})
			known[v.Name] = true
			if v.Secret {
				known[v.Name+fileSuffix] = true
			}
		}
	}
	var b strings.Builder
	b.WriteString("| variable | read by | default | meaning |\n|---|---|---|---|\n")
	for _, name := range order {
		ds := decls[name]
		readers := make([]string, len(ds))
		defaults := make([]string, len(ds))
		meanings := make([]string, len(ds))
		for i, d := range ds {
			readers[i] = d.program
			defaults[i] = defaultCell(d.v, known)
			meanings[i] = meaningCell(d.v, known)
		}
		row := []string{"`" + name + "`", readBy(readers, len(programs)),
			agreed(readers, defaults), agreed(readers, meanings)}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

// readBy names the programs that read a variable: "both" or "all" when every one of
// n does.
func readBy(readers []string, n int) string {
	switch {
	case len(readers) == n && n == 2:
		return "both"
	case len(readers) == n && n > 2:
		return "all"
	}
	return strings.Join(readers, ", ")
}

// agreed is the cell once when every program's is the same, else each program's
// after its name, one per line.
func agreed(readers, cells []string) string {
	same := true
	for _, c := range cells[1:] {
		same = same && c == cells[0]
	}
	if same {
		return cells[0]
	}
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = readers[i] + ": " + c
	}
	return strings.Join(out, "<br>")
}

// defaultCell is the default as code, a derived default as text, or "none".
func defaultCell(v Variable, known map[string]bool) string {
	switch {
	case v.Default == "":
		return "none"
	case v.Derived:
		return text(v.Default, known)
	}
	return "`" + strings.ReplaceAll(v.Default, "|", `\|`) + "`"
}

// meaningCell is the help followed by what Load enforces and, for a secret, the
// variable naming its file.
func meaningCell(v Variable, known map[string]bool) string {
	help := strings.Join(strings.Fields(v.Help), " ")
	var notes []string
	if v.Bounds != "" {
		notes = append(notes, v.Bounds)
	}
	if len(v.Required) > 0 {
		notes = append(notes, "required by "+strings.Join(v.Required, " and "))
	}
	if len(notes) > 0 {
		help += " (" + strings.Join(notes, "; ") + ")"
	}
	if v.Secret {
		help += ". " + v.Name + fileSuffix + " may name a file holding it instead"
	}
	return text(help, known)
}

// text escapes s for a cell and sets the known variable names in it as code.
func text(s string, known map[string]bool) string {
	return variableName.ReplaceAllStringFunc(escapeText(s), func(n string) string {
		if known[n] {
			return "`" + n + "`"
		}
		return n
	})
}

// variableName matches a word that may be a variable's name: capitals, digits and
// underscores.
var variableName = regexp.MustCompile(`\b[A-Z][A-Z0-9_]*\b`)

// escapeText keeps Markdown from reading text as markup: a table's cell separator,
// HTML tags (whsec_<base64>), emphasis and code.
var escapeText = strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", `\<`, "*", `\*`, "`", "\\`").Replace
