package httpserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// HealthcheckTimeout bounds one Healthcheck; it stays under the container
// healthcheck's own timeout (5 s in compose.yaml) so the reason of a failure reaches
// the health log instead of a kill.
const HealthcheckTimeout = 4 * time.Second

// Healthcheck is ProbeReady within HealthcheckTimeout: the `healthcheck` command of
// both services, the HEALTHCHECK of an image without curl. addr is the container's
// HTTP_ADDR.
func Healthcheck(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, HealthcheckTimeout)
	defer cancel()
	return ProbeReady(ctx, addr)
}

// ProbeReady asks the server listening on addr, the listen address the service was
// given (such as 0.0.0.0:8081), whether it is ready: one GET of /readyz, on 127.0.0.1
// when addr names every interface. It returns nil on 200 and otherwise an error with
// the status and the server's reason. It is the healthcheck of container images that
// have no curl; the deadline is ctx's. It is the only outgoing call not made through
// egress.NewClient, and it only ever reaches the service itself.
func ProbeReady(ctx context.Context, addr string) error {
	url, err := readyURL(addr)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	// The one client outside egress.NewClient: it calls only the process's own
	// listen address on loopback, which the SSRF guard exists to refuse. No proxy from
	// the environment (a zero Transport has none), no redirect followed, no connection
	// kept: one request, then exit.
	client := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	reason, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Errorf("probe %s: %s: %s", url, resp.Status, strings.TrimSpace(string(reason)))
}

// readyURL is the /readyz URL of a server listening on addr; an unspecified host
// (empty, 0.0.0.0 or ::) is reached on 127.0.0.1, which a dual-stack listener answers.
func readyURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("probe: listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}
