package envconf_test

import (
	"fmt"
	"time"

	"handoff/pkg/integrationkit/envconf"
)

// A binary declares each variable once and loads them all at start; everything
// wrong comes back as one line.
func ExampleSet_Load() {
	var cfg struct {
		Addr    string
		Backoff []time.Duration
	}
	set := envconf.Set{Settings: []envconf.Setting{
		envconf.String(&cfg.Addr, "HTTP_ADDR", "127.0.0.1:8081", "listen address", envconf.HostPort),
		envconf.Durations(&cfg.Backoff, "DISPATCH_BACKOFF", []time.Duration{5 * time.Second}, 50*time.Millisecond, "retry ceilings"),
	}}
	fmt.Println(set.Load([]string{"HTTP_ADDR=:8081", "DISPATCH_BACKOFF=1s,2s"}, "serve"), cfg.Addr, cfg.Backoff)
	fmt.Println(set.Load([]string{"HTTP_ADDR=abc", "DISPATCH_BACKOF=1s"}, "serve"))
	fmt.Print(set.Help())
	// Output:
	// <nil> :8081 [1s 2s]
	// invalid configuration: HTTP_ADDR: want host:port such as 127.0.0.1:8081 or :8081, got "abc"; DISPATCH_BACKOF: unknown variable; did you mean DISPATCH_BACKOFF?
	// Environment:
	//   HTTP_ADDR         listen address (default 127.0.0.1:8081)
	//   DISPATCH_BACKOFF  retry ceilings (default 5s; each at least 50ms)
	//
	// A variable that starts like one above (up to its first '_') but is not listed is
	// refused, with the closest listed name.
}
