// Package buildinfo prints what a binary was built from: the main module's version,
// the VCS revision, commit time and modified flag the go command stamped, the Go
// version and the platform.
package buildinfo

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Print writes the build information of the running binary under name; it needs no
// configuration, so a binary can answer `version` where serve would refuse to start.
func Print(w io.Writer, name string) error {
	info, _ := debug.ReadBuildInfo()
	return Write(w, name, info)
}

// Write renders info (nil when the binary carries none): the main module's
// version, the VCS revision, commit time and modified flag the go command stamped, and
// the Go version and platform. What was not stamped reads "unknown".
func Write(w io.Writer, name string, info *debug.BuildInfo) error {
	version, goVersion := "", runtime.Version()
	vcs := map[string]string{}
	if info != nil {
		version, goVersion = info.Main.Version, info.GoVersion
		for _, s := range info.Settings {
			vcs[s.Key] = s.Value
		}
	}
	unknown := func(s string) string { return cmp.Or(s, "unknown") }
	_, err := fmt.Fprintf(w, "%s %s\n  revision  %s\n  time      %s\n  modified  %s\n  go        %s\n  platform  %s/%s\n",
		name, unknown(version), unknown(vcs["vcs.revision"]), unknown(vcs["vcs.time"]),
		unknown(vcs["vcs.modified"]), goVersion, runtime.GOOS, runtime.GOARCH)
	return err
}

// Version names the running build in one word: the main module's version when it is
// a release, else the VCS revision, else "unknown" (a service's traces carry it).
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return "unknown"
}
