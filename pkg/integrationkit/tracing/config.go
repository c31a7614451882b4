package tracing

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"handoff/pkg/integrationkit/envconf"
)

// Config is where spans go and what they say about the service.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL of a collector, e.g. http://collector:4318;
	// spans are posted to Endpoint + "/v1/traces". Empty: tracing is off.
	Endpoint string
	// Headers are sent with every export (a collector's credentials).
	Headers map[string]string
	// ServiceName is the resource's service.name.
	ServiceName string
	// ResourceAttributes are further resource attributes (deployment.environment, …).
	ResourceAttributes []attribute.KeyValue
	// ScheduleDelay is how long a finished span may wait for its batch's export.
	ScheduleDelay time.Duration
}

// DefaultScheduleDelay is the OpenTelemetry default of OTEL_BSP_SCHEDULE_DELAY.
const DefaultScheduleDelay = 5 * time.Second

// Settings declares the standard OpenTelemetry variables a service reads, storing into
// c, with service as the default service name. They keep their OpenTelemetry names and
// formats, and they are all a binary reads of OTEL_*: the SDK's other variables are
// refused like any unknown one rather than half honoured.
func (c *Config) Settings(service string) []envconf.Setting {
	return []envconf.Setting{
		envconf.String(&c.Endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT", "",
			"OTLP/HTTP collector base URL, e.g. http://collector:4318; spans go to its /v1/traces "+
				"(default none: tracing off, no span is made)", envconf.HTTPURL),
		envconf.Secret(envconf.Setting{Name: "OTEL_EXPORTER_OTLP_HEADERS",
			Help: "key=value pairs, comma-separated, values URL-encoded, sent with every export " +
				"(the collector's credentials)",
			Parse: func(v string) (err error) { c.Headers, err = parsePairs(v); return err }}),
		envconf.String(&c.ServiceName, "OTEL_SERVICE_NAME", service, "service.name of every span", nil),
		{Name: "OTEL_RESOURCE_ATTRIBUTES", Help: "further resource attributes as key=value pairs, " +
			"comma-separated, values URL-encoded, e.g. deployment.environment=prod",
			Parse: func(v string) error {
				pairs, err := parsePairs(v)
				for k, val := range pairs {
					c.ResourceAttributes = append(c.ResourceAttributes, attribute.String(k, val))
				}
				return err
			}},
		{Name: "OTEL_BSP_SCHEDULE_DELAY", Default: strconv.Itoa(int(DefaultScheduleDelay.Milliseconds())),
			Help: "milliseconds a finished span may wait before its batch is exported", Bounds: "at least 10",
			Parse: func(v string) error {
				ms, err := strconv.Atoi(v)
				if err != nil || ms < 10 {
					return fmt.Errorf("want whole milliseconds, at least 10, got %q", v)
				}
				c.ScheduleDelay = time.Duration(ms) * time.Millisecond
				return nil
			}},
	}
}

// parsePairs reads the OpenTelemetry list format: key=value pairs separated by commas,
// each value URL-encoded. A malformed value is not repeated: headers carry secrets.
func parsePairs(v string) (map[string]string, error) {
	out := map[string]string{}
	for i, pair := range strings.Split(v, ",") {
		key, value, ok := strings.Cut(pair, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("entry %d is not key=value", i+1)
		}
		decoded, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): the value is not URL-encoded", i+1, key)
		}
		out[key] = decoded
	}
	return out, nil
}
