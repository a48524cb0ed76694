package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"

	"github.com/hbtsdb/hbtsdb/schema"
)

// version is set at build time: go build -ldflags "-X main.version=1.2.3".
var version = "0.1.0-dev"

func registerVersion(a *app) {
	cmd := a.kp.Command("version", "Print the version, the Go version it was built with and the schema format it writes.")
	a.actions[cmd.FullCommand()] = func(context.Context, *slog.Logger) error {
		fmt.Fprintln(a.out, versionString())
		return nil
	}
}

func versionString() string {
	return fmt.Sprintf("tsdb %s (revision %s, %s %s/%s, schema format %d)",
		version, revision(), runtime.Version(), runtime.GOOS, runtime.GOARCH, schema.CurrentFormatVersion)
}

// revision is the VCS revision the binary was built from, or "unknown".
func revision() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
