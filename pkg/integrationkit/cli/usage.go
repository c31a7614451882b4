package cli

import (
	"cmp"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
)

// usage renders a command's usage: its usage line, what it does, and each of the flags
// declared on fs with its help and default.
func (p Program) usage(c *Command, fs *flag.FlagSet) string {
	var b strings.Builder
	line := []string{"Usage:", p.Name, c.Name}
	if c.Args != "" {
		line = append(line, c.Args)
	}
	nflags := 0
	fs.VisitAll(func(*flag.Flag) { nflags++ })
	if nflags > 0 {
		line = append(line, "[flags]")
	}
	b.WriteString(strings.Join(line, " ") + "\n")
	if about := strings.TrimSpace(cmp.Or(c.Help, c.Summary)); about != "" {
		b.WriteString("\n" + about + "\n")
	}
	if nflags == 0 {
		return b.String()
	}
	b.WriteString("\nFlags:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		name, help := flag.UnquoteUsage(f)
		flagText := "--" + f.Name
		if name != "" {
			flagText += "=<" + name + ">"
		}
		if d := f.DefValue; d != "" && d != "0" && d != "false" {
			help += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", flagText, help)
	})
	_ = tw.Flush()
	return b.String()
}

// groupUsage renders the usage of the commands whose first word is group: each with
// its summary.
func (p Program) groupUsage(group string, members []Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s %s <command> [flags] [arguments]\n\nCommands:\n", p.Name, group)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range members {
		_, rest, _ := strings.Cut(c.Name, " ")
		fmt.Fprintf(tw, "  %s\t%s\n", rest, c.Summary)
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\nRun \"%s %s <command> --help\" for a command's flags and arguments.\n", p.Name, group)
	return b.String()
}
