// Command tsdb is hbtsdb: a Prometheus-compatible time-series store on Apache HBase
// (or, on a laptop, on an embedded store in a local directory).
//
//	tsdb serve                    run the server (remote write/read, PromQL API) and the compaction worker
//	tsdb compact [--once]         compact sealed buckets into chunks and rollups, alone
//	tsdb schema create [--print]  create the tables and the schema meta row
//	tsdb schema check [--print]   check the tables and schema settings of a store
//	tsdb import openmetrics|remote-read|opentsdb   load files, a remote-read source or OpenTSDB's tables into the store
//	tsdb version, tsdb --version  print the version
//
// Every flag has an environment twin: --storage is TSDB_STORAGE, --schema.salts
// is TSDB_SCHEMA_SALTS, and so on. This package only wires: it parses flags,
// opens the store and hands it to the packages that do the work.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code: 0 on success,
// 1 when the command failed, 2 when the command line itself is wrong.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	if len(args) == 0 {
		app.kp.Usage(nil)
		fmt.Fprintln(stderr, "tsdb: command not specified (see tsdb --help)")
		return 2
	}
	if i := slices.Index(args, "--version"); i >= 0 && !slices.Contains(args[:i], "--") {
		fmt.Fprintln(stdout, versionString())
		return 0
	}
	cmd, err := app.kp.Parse(app.normalizeBoolFlags(args))
	if app.exited { // --help or --version was answered
		return app.exitCode
	}
	if err != nil {
		fmt.Fprintf(stderr, "tsdb: %v (see tsdb --help)\n", explainParseError(app.kp.Model(), args, err))
		return 2
	}
	logger, err := app.common.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tsdb: %v\n", err)
		return 2
	}
	action, ok := app.actions[cmd]
	if !ok {
		fmt.Fprintf(stderr, "tsdb: no command given (see tsdb --help)\n")
		return 2
	}
	if err := action(ctx, logger); err != nil {
		fmt.Fprintf(stderr, "tsdb %s: %v\n", cmd, err)
		return 1
	}
	return 0
}
