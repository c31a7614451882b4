package main

// usage is logistics' help: every command and the exit statuses; `logistics help`
// adds the variables it reads.
const usage = `Usage: logistics <command>

Commands:
  serve                 apply pending migrations (unless MIGRATE_ON_START=false) and
                        serve the finance webhook, the warehouse API, /healthz and /readyz
                        until SIGINT or SIGTERM
  migrate up            apply every pending migration
  migrate down          revert every migration (drops the logistics tables)
  migrate version       print the applied migration version
  retention run         delete processed events past RETENTION_PROCESSED_AGE now and
                        print how many (what it does, batch by batch, on stderr)
  healthcheck           exit 0 when the server at HTTP_ADDR answers /readyz (the
                        container healthcheck; the image has no curl)
  version               print the build: module version, VCS revision, Go version
  help [<command>]      print this help, or a command's (the same as <command> --help)
  help --json           the variables below as JSON (README.md's configuration table
                        is made from it)

Exit status: 0 done, 1 failed, 2 a mistake on the command line (an unknown command
or flag, a missing or extra argument), printed on stderr with the usage of the
command it was made in.

`
