package envconf

import (
	"strconv"
	"strings"
)

// helpWidth is the widest line Help writes unless a single word is wider.
const helpWidth = 90

// Help renders the settings for --help: "Environment:", then one entry per variable
// with its name at two spaces' indent and its help beside it, ending in what Load
// enforces (default, bounds, the commands that require it); each secret's NAME_FILE
// follows it. Two paragraphs after the list say how unknown names and files are
// treated.
func (s Set) Help() string {
	width := 0
	for _, n := range s.Names() {
		width = max(width, len(n))
	}
	var b strings.Builder
	b.WriteString("Environment:\n")
	secrets := false
	for _, st := range s.Settings {
		writeEntry(&b, width, st.Name, st.Help, st.note())
		if st.Secret {
			writeEntry(&b, width, st.Name+fileSuffix, "the file to read "+st.Name+" from instead", "")
			secrets = true
		}
	}
	b.WriteString("\nA variable that starts like one above (up to its first '_') but is not listed is\n" +
		"refused, with the closest listed name.\n")
	if secrets {
		b.WriteString("A *_FILE variable names a file whose content, trailing newline trimmed, is the\n" +
			"value; setting a variable and its *_FILE both is an error.\n")
	}
	return b.String()
}

// note says in parentheses what Load enforces beyond the help text, or "".
func (st Setting) note() string {
	var parts []string
	if d := st.Default; d != "" {
		if st.DefaultFrom == nil && strings.ContainsRune(d, ' ') {
			d = strconv.Quote(d) // a value, typed as it is written
		}
		parts = append(parts, "default "+d)
	}
	if st.Bounds != "" {
		parts = append(parts, st.Bounds)
	}
	if len(st.Required) > 0 {
		parts = append(parts, "required by "+strings.Join(st.Required, " and "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, "; ") + ")"
}

// writeEntry writes name, padded to width, then help followed by note, wrapped at
// helpWidth; a newline in help starts a new line.
func writeEntry(b *strings.Builder, width int, name, help, note string) {
	text := help
	if note != "" {
		text = strings.TrimSpace(help + " " + note)
	}
	indent := 2 + width + 2
	label := name
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			if line != "" && indent+len(line)+1+len(word) > helpWidth {
				writeLine(b, width, label, line)
				label, line = "", ""
			}
			line = strings.TrimPrefix(line+" "+word, " ")
		}
		writeLine(b, width, label, line)
		label = ""
	}
}

// writeLine writes one line of an entry: label (a name or "") padded to width, text.
func writeLine(b *strings.Builder, width int, label, text string) {
	b.WriteString(strings.TrimRight("  "+label+strings.Repeat(" ", width+2-len(label))+text, " ") + "\n")
}
