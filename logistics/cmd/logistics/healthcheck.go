package main

import (
	"context"
	"time"

	"handoff/pkg/integrationkit/httpserver"
)

// healthcheckTimeout bounds one probe; it stays under the container healthcheck's own
// timeout so the reason of a failure reaches the health log instead of a kill.
const healthcheckTimeout = 4 * time.Second

// healthcheck returns nil when the logistics server listening on addr (this container's
// HTTP_ADDR) answers /readyz with 200: the HEALTHCHECK of an image without curl.
func healthcheck(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	return httpserver.ProbeReady(ctx, addr)
}
