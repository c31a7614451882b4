package main

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionNeedsNoConfiguration(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"version"}, nil, &out, io.Discard))
	require.True(t, strings.HasPrefix(out.String(), "finance "), out.String())
	require.Contains(t, out.String(), "  go        go1.")
	require.Contains(t, out.String(), "  platform  "+runtime.GOOS+"/"+runtime.GOARCH)
}
