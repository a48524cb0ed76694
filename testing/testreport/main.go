// Command testreport runs `go test -json` (or any command printing test2json
// events on its standard output) and prints what a person reading a CI log
// needs, and nothing else: each package's ok line; for a package that failed,
// its own output and the full output of the tests that failed (or never
// finished, as when the test binary panicked or timed out), in the order they
// were printed; build errors; and at the end the list of failed tests and the
// list of skipped tests — "skipped tests: none" when none skipped. The output
// of passing tests is not printed.
//
// Usage:
//
//	go run ./testing/testreport [-fail-on-skip] go test -json [flags] [packages]
//
// It exits 1 when the command failed or a test failed, and, with
// -fail-on-skip, when a test skipped: `make test` sets the
// TSDB_TEST_REQUIRE_* variables (testing/testenv), under which no test may
// skip, and passes -fail-on-skip so that one that does all the same fails the
// run instead of passing unnoticed. A package without tests is not a skipped
// test. SIGINT and SIGTERM are passed on to the command, whose remaining
// output is still reported.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	failOnSkip := flag.Bool("fail-on-skip", false, "exit 1 when a test skipped (make test: no test may skip under the TSDB_TEST_REQUIRE_* variables)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: testreport [-fail-on-skip] go test -json [flags] [packages]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stderr = os.Stderr
	os.Exit(run(cmd, os.Stdout, *failOnSkip))
}

// run runs cmd, reports its test2json output to w, and returns the exit code.
func run(cmd *exec.Cmd, w io.Writer, failOnSkip bool) int {
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	sum := report(out, w)
	waitErr := cmd.Wait()
	signal.Stop(sigs)
	close(sigs)

	code := 0
	if waitErr != nil {
		fmt.Fprintf(w, "testreport: %s: %v\n", strings.Join(cmd.Args, " "), waitErr)
		code = 1
	}
	if !sum.ok(failOnSkip) {
		code = 1
	}
	if failOnSkip && len(sum.skipped) > 0 {
		fmt.Fprintf(w, "FAIL: tests skipped (%d) under -fail-on-skip: make test sets the TSDB_TEST_REQUIRE_* variables "+
			"(testing/testenv), under which every test must run; make the test provide what it lacks, or fail saying what is missing\n", len(sum.skipped))
	}
	return code
}
