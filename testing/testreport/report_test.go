package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A module of small packages that pass, fail, skip, panic and do not build,
// for a real `go test -json` to report on.
var fixture = map[string]string{
	"go.mod": "module example.com/fixture\n\ngo 1.26\n",
	"pass/pass_test.go": `package pass

import "testing"

func TestPass(t *testing.T) { t.Log("PASSING-LOG") }
`,
	"skip/skip_test.go": `package skip

import "testing"

func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("no widget: install one") }
`,
	"fail/fail_test.go": `package fail

import "testing"

func TestParent(t *testing.T) {
	t.Run("good", func(t *testing.T) { t.Log("PASSING-SUBTEST-LOG") })
	t.Run("bad", func(t *testing.T) { t.Log("FAILING-LOG"); t.Error("WRONG-ANSWER") })
}
func TestPass(t *testing.T) { t.Log("PASSING-LOG") }
`,
	"panic/panic_test.go": `package panic

import "testing"

func TestPanic(t *testing.T) { t.Log("BEFORE-PANIC"); panic("BOOM") }
`,
	"broken/broken_test.go": `package broken

import "testing"

func TestBroken(t *testing.T) { undefinedFunction() }
`,
	"notests/notests.go": "package notests\n",
}

// goTest runs testreport's run on `go test -json` of the fixture's packages.
func goTest(t *testing.T, failOnSkip bool, pkgs ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range fixture {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", append([]string{"test", "-json", "-count=1"}, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	code := run(cmd, &out, failOnSkip)
	return code, out.String()
}

func TestReportOfARealRun(t *testing.T) {
	code, out := goTest(t, true, "./...")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, want := range []string{
		"ok  \texample.com/fixture/pass\t",
		"?   \texample.com/fixture/notests\t[no test files]",
		// the failed test's output, with its parent's lines
		"=== RUN   TestParent\n=== RUN   TestParent/bad\n    fail_test.go:7: FAILING-LOG\n    fail_test.go:7: WRONG-ANSWER\n--- FAIL: TestParent/bad",
		"--- FAIL: TestParent (",
		"FAIL\texample.com/fixture/fail\t",
		// the panic, outside any test's end
		"BEFORE-PANIC", "panic: BOOM",
		// the build error
		"undefined: undefinedFunction", "example.com/fixture/broken [build failed]",
		"failed tests: 3\n",
		"    example.com/fixture/fail TestParent/bad\n",
		"    example.com/fixture/panic TestPanic\n",
		"    example.com/fixture/broken (the package: a build error",
		"skipped tests: 1\n    example.com/fixture/skip TestSkip: skip_test.go:6: no widget: install one\n",
		"FAIL: tests skipped (1) under -fail-on-skip",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"PASSING-LOG", "PASSING-SUBTEST-LOG", "TestParent/good", "=== RUN   TestPass"} {
		if strings.Contains(out, not) {
			t.Errorf("the report shows %q, the output of a passing test:\n%s", not, out)
		}
	}
}

func TestASkipFailsOnlyUnderFailOnSkip(t *testing.T) {
	for _, tc := range []struct {
		failOnSkip bool
		pkgs       []string
		code       int
		want       string
	}{
		{false, []string{"./pass", "./notests"}, 0, "failed tests: none\nskipped tests: none\n"},
		{true, []string{"./pass", "./notests"}, 0, "failed tests: none\nskipped tests: none\n"},
		{false, []string{"./skip"}, 0, "skipped tests: 1\n    example.com/fixture/skip TestSkip: skip_test.go:6: no widget: install one\n"},
		{true, []string{"./skip"}, 1, "skipped tests: 1\n    example.com/fixture/skip TestSkip: skip_test.go:6: no widget: install one\n"},
	} {
		code, out := goTest(t, tc.failOnSkip, tc.pkgs...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("-fail-on-skip=%v %v: exit code %d, want %d; report:\n%s\nwant it to contain:\n%s", tc.failOnSkip, tc.pkgs, code, tc.code, out, tc.want)
		}
	}
}

// TestReportJoinsInterleavedPartialLines: parallel tests' output arrives in
// pieces, interleaved; each test's lines are joined, and a package whose
// output ends before it does fails with all it printed.
func TestReportJoinsInterleavedPartialLines(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a.go:1: first "}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b.go:1: other\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"half\n--- FAIL: TestA (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}`,
		`{"Action":"fail","Package":"p"}`,
		`not json, copied`,
		`{"Action":"start","Package":"q"}`,
		`{"Action":"output","Package":"q","Test":"TestC","Output":"    c.go:1: running when killed\n"}`,
	}, "\n")
	var out bytes.Buffer
	sum := report(strings.NewReader(in), &out)
	want := "    a.go:1: first half\n--- FAIL: TestA (0.00s)\nFAIL\tp\t0.1s\nnot json, copied\n" +
		"q: the test output ends before the package does\n    c.go:1: running when killed\n" +
		"failed tests: 2\n    p TestA\n    q (the package: a build error, or a crash outside the tests; its output is above)\nskipped tests: none\n"
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
	if sum.ok(false) || sum.failedPkgs != 2 {
		t.Errorf("summary %+v: want 2 failed packages", sum)
	}
}
