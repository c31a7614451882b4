package tracing_test

import (
	"context"
	"fmt"
	"log/slog"

	"handoff/pkg/integrationkit/tracing"
)

// Without an endpoint tracing is off: the provider is nil, and components given it
// start no span.
func ExampleStart() {
	p, err := tracing.Start(context.Background(), tracing.Config{ServiceName: "svc"}, "v1", slog.Default())
	if err != nil {
		panic(err)
	}
	defer p.Close() // at exit: flushes what is queued, within CloseTimeout
	fmt.Println(p.TracerProvider() == nil)
	// Output: true
}

// A stored traceparent becomes a remote parent again, as the dispatcher does with an
// outbox row's.
func ExampleRemote() {
	ctx := tracing.Remote(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	fmt.Println(tracing.Traceparent(ctx))
	fmt.Printf("%q\n", tracing.Traceparent(context.Background()))
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// ""
}
