package cli_test

import (
	"context"
	"flag"
	"fmt"
	"os"

	"handoff/pkg/integrationkit/cli"
)

// A binary declares its commands once; main parses, prints help or runs, and exits
// with Status.
func ExampleProgram_Parse() {
	prog := cli.Program{Name: "svc", Usage: "Usage: svc retention run\n", Commands: []cli.Command{{
		Name: "retention run", Summary: "purge old rows now",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			batch := fs.Int("batch", 1000, "`rows` per statement")
			return func(context.Context, []string) error {
				fmt.Println("purging in batches of", *batch)
				return nil
			}
		},
	}}}
	for _, args := range [][]string{{"retention", "run", "--batch=10"}, {"retention", "run", "--help"}, {"retention", "run", "--batch=x"}} {
		call, err := prog.Parse(args)
		switch {
		case err != nil:
			fmt.Println("exit", cli.Status("svc", err, os.Stdout))
		case call.Help != "":
			fmt.Print(call.Help)
		default:
			fmt.Println("exit", cli.Status("svc", call.Run(context.Background()), os.Stdout))
		}
	}
	// Output:
	// purging in batches of 10
	// exit 0
	// Usage: svc retention run [flags]
	//
	// purge old rows now
	//
	// Flags:
	//   --batch=<rows>  rows per statement (default 1000)
	// svc: retention run: invalid value "x" for flag --batch: parse error
	//
	// Usage: svc retention run [flags]
	//
	// purge old rows now
	//
	// Flags:
	//   --batch=<rows>  rows per statement (default 1000)
	// exit 2
}
