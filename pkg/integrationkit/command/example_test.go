package command_test

import (
	"context"
	"fmt"
	"os"

	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command"
)

// A binary declares its name, usage, configuration and own commands; the standard
// commands come with it. (Its main is `func main() { command.Main("svc", run) }`.)
func ExampleBinary_Run() {
	svc := command.Binary[config]{
		Name: "svc", Usage: "Usage: svc serve|migrate|retention run|healthcheck|version\n",
		Settings: (&config{}).settings(), Stdout: os.Stdout, Stderr: os.Stderr,
		Commands: []cli.Command{{Name: "serve", Summary: "serve until SIGTERM",
			Run: func(context.Context, []string) error { return nil }}},
	}
	for _, args := range [][]string{{"migrate", "--help"}, {"healthcheck", "--help"}, {"migrate", "sideways"}} {
		if err := svc.Run(context.Background(), args); err != nil {
			fmt.Println("exit", cli.Status("svc", err, os.Stdout))
		}
	}
	// Output:
	// Usage: svc migrate <command> [flags] [arguments]
	//
	// Commands:
	//   up       apply every pending migration
	//   down     revert every migration (drops the svc tables)
	//   version  print the applied migration version
	//
	// Run "svc migrate <command> --help" for a command's flags and arguments.
	// Usage: svc healthcheck
	//
	// Exit 0 when the server at HTTP_ADDR answers /readyz, 1 otherwise: the container
	// healthcheck (the image has no curl).
	// svc: migrate: unknown command "sideways"
	//
	// Usage: svc migrate <command> [flags] [arguments]
	//
	// Commands:
	//   up       apply every pending migration
	//   down     revert every migration (drops the svc tables)
	//   version  print the applied migration version
	//
	// Run "svc migrate <command> --help" for a command's flags and arguments.
	// exit 2
}
