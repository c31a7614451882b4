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
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	if err := serve(ctx, cmp.Or(os.Getenv("LISTEN_ADDR"), "0.0.0.0:8080"), log); err != nil {
		fmt.Fprintln(os.Stderr, "slackstandin:", err)
		os.Exit(1)
	}
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
