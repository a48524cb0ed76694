package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// event is one test2json event (go doc cmd/test2json), with the ImportPath of
// the build events (build-output, build-fail) that `go test -json` adds.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string
}

// chunk is a piece of a package's output: the test that printed it ("" for
// the package itself) and the text.
type chunk struct {
	test, text string
}

// pkgState is what is kept of a package until it ends.
type pkgState struct {
	chunks []chunk
	// ended holds the tests that passed, failed or skipped; failed those
	// that failed.
	ended, failed map[string]bool
}

// testRef names a test of a package, with what it printed when it skipped.
type testRef struct {
	pkg, test, reason string
}

// summary is what report saw.
type summary struct {
	failed, skipped []testRef
	// failedPkgs counts the packages that failed (tests, build, or crash);
	// events counts the JSON events read.
	failedPkgs, events int
}

// ok reports whether the run passed: no failed package or test, some events
// read, and, under failOnSkip, no skipped test.
func (s summary) ok(failOnSkip bool) bool {
	return s.failedPkgs == 0 && len(s.failed) == 0 && s.events > 0 && !(failOnSkip && len(s.skipped) > 0)
}

// report reads test2json events from r until EOF and writes the report to w:
// build output as it comes, each package when it ends (its ok line, or its
// output and that of its failed and unfinished tests), then the lists of
// failed and skipped tests. A line that is not JSON is copied as it is.
func report(r io.Reader, w io.Writer) summary {
	var sum summary
	pkgs := map[string]*pkgState{}
	state := func(name string) *pkgState {
		p := pkgs[name]
		if p == nil {
			p = &pkgState{ended: map[string]bool{}, failed: map[string]bool{}}
			pkgs[name] = p
		}
		return p
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		sum.events++
		switch e.Action {
		case "build-output":
			io.WriteString(w, e.Output)
			continue
		case "build-fail":
			continue
		}
		p := state(e.Package)
		switch e.Action {
		case "output":
			p.chunks = append(p.chunks, chunk{e.Test, e.Output})
		case "pass", "fail", "skip":
			if e.Test != "" {
				p.ended[e.Test] = true
				switch e.Action {
				case "fail":
					p.failed[e.Test] = true
					sum.failed = append(sum.failed, testRef{pkg: e.Package, test: e.Test})
				case "skip":
					sum.skipped = append(sum.skipped, testRef{pkg: e.Package, test: e.Test, reason: skipReason(p.chunks, e.Test)})
				}
				continue
			}
			if e.Action == "fail" {
				failPackage(&sum, e.Package, p)
				printFailedPackage(w, p)
			} else {
				printPackageLines(w, p)
			}
			delete(pkgs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w, "testreport: reading the test output: %v\n", err)
		sum.failedPkgs++
	}
	// Packages that never ended (the command was killed): everything they
	// printed, sorted by package.
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "%s: the test output ends before the package does\n", name)
		failPackage(&sum, name, pkgs[name])
		printFailedPackage(w, pkgs[name])
	}
	if sum.events == 0 {
		fmt.Fprintln(w, "testreport: no test events read (is the command `go test -json`?)")
	}

	leaves := leafFailures(sum.failed)
	if len(leaves) == 0 {
		fmt.Fprintln(w, "failed tests: none")
	} else {
		fmt.Fprintf(w, "failed tests: %d\n", len(leaves))
		for _, f := range leaves {
			if f.test == "" {
				fmt.Fprintf(w, "    %s (the package: a build error, or a crash outside the tests; its output is above)\n", f.pkg)
			} else {
				fmt.Fprintf(w, "    %s %s\n", f.pkg, f.test)
			}
		}
	}
	if len(sum.skipped) == 0 {
		fmt.Fprintln(w, "skipped tests: none")
	} else {
		fmt.Fprintf(w, "skipped tests: %d\n", len(sum.skipped))
		for _, s := range sum.skipped {
			fmt.Fprintf(w, "    %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	return sum
}

// failPackage counts package pkg as failed, and lists it among the failed
// tests when none of its tests failed (a build error, a crash or a timeout
// outside them).
func failPackage(sum *summary, pkg string, p *pkgState) {
	sum.failedPkgs++
	if len(p.failed) == 0 {
		sum.failed = append(sum.failed, testRef{pkg: pkg})
	}
}

// printPackageLines prints a package's own "ok" or "no test files" line.
func printPackageLines(w io.Writer, p *pkgState) {
	for _, l := range lines(p.chunks, func(test string) bool { return test == "" }) {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?   ") {
			fmt.Fprintln(w, l)
		}
	}
}

// printFailedPackage prints what a failed package printed itself and what its
// failed and unfinished tests printed, in order.
func printFailedPackage(w io.Writer, p *pkgState) {
	for _, l := range lines(p.chunks, func(test string) bool { return test == "" || p.failed[test] || !p.ended[test] }) {
		fmt.Fprintln(w, l)
	}
}

// lines joins the chunks of the tests keep accepts, by test, and returns
// their lines in the order each line was started.
func lines(chunks []chunk, keep func(test string) bool) []string {
	var out []string
	open := map[string]int{} // test -> index in out of its unfinished line
	for _, c := range chunks {
		if !keep(c.test) {
			continue
		}
		text := c.text
		for text != "" {
			piece, rest, full := strings.Cut(text, "\n")
			if i, ok := open[c.test]; ok {
				out[i] += piece
			} else {
				out = append(out, piece)
				open[c.test] = len(out) - 1
			}
			if full {
				delete(open, c.test)
			}
			text = rest
		}
	}
	return out
}

// skipReason is what test printed apart from the framework's lines (=== RUN,
// --- SKIP, ...), on one line: the t.Skip message and logs before it.
func skipReason(chunks []chunk, test string) string {
	var reason []string
	for _, l := range lines(chunks, func(t string) bool { return t == test }) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		reason = append(reason, l)
	}
	if len(reason) == 0 {
		return "(no reason given)"
	}
	return strings.Join(reason, " / ")
}

// leafFailures drops, from failed, the tests that failed only because a subtest
// did: a test is listed unless one of its subtests is.
func leafFailures(failed []testRef) []testRef {
	var out []testRef
	for _, f := range failed {
		parent := false
		for _, g := range failed {
			if g.pkg == f.pkg && strings.HasPrefix(g.test, f.test+"/") {
				parent = true
				break
			}
		}
		if !parent {
			out = append(out, f)
		}
	}
	return out
}
