// Command slackstandin stands in for Slack where no Slack is reachable: the optional
// "slack" profile of compose.yaml and local trials of paging. It answers an incoming
// webhook post with "ok" and a Web API chat.postMessage with {"ok":true}, as Slack does,
// and writes every message it receives as one JSON line on stdout, so
// `docker compose logs slack` shows what on-call would have been paged with.
//
// It listens on LISTEN_ADDR (default 0.0.0.0:8080) until SIGINT or SIGTERM.
package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"handoff/pkg/integrationkit/command"
)

func main() { command.Main("slackstandin", run) }

// run serves until ctx ends, logging every message as a JSON line on stdout.
func run(ctx context.Context, _, _ []string, stdout, _ io.Writer) error {
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	return serve(ctx, cmp.Or(os.Getenv("LISTEN_ADDR"), "0.0.0.0:8080"), log)
}

// serve answers on addr until ctx ends, then lets requests in flight finish.
func serve(ctx context.Context, addr string, log *slog.Logger) error {
	srv := &http.Server{Addr: addr, Handler: newHandler(log), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("slack stand-in listening", "addr", addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
