package buildinfo

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "handoff/finance", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "CGO_ENABLED", Value: "0"},
			{Key: "vcs.revision", Value: "0662cae5f3ab"},
			{Key: "vcs.time", Value: "2026-11-29T09:19:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"stamped", stamped, "finance v1.4.0\n  revision  0662cae5f3ab\n  time      2026-11-29T09:19:00Z\n" +
			"  modified  true\n  go        go1.26.8\n  platform  " + platform + "\n"},
		{"no build info", nil, "finance unknown\n  revision  unknown\n  time      unknown\n" +
			"  modified  unknown\n  go        " + runtime.Version() + "\n  platform  " + platform + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			require.NoError(t, Write(&out, "finance", tc.info))
			require.Equal(t, tc.want, out.String())
		})
	}
}
