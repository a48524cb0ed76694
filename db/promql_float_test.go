package db_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/promqltest"
)

// indirectHistogramEvals are evals that select native-histogram series without
// naming them (by another label or a regex over names), which floatParts cannot
// tell from the text: they are dropped too, by a substring of their line.
var indirectHistogramEvals = map[string][]string{
	"aggregators.test": {`max({job="api-server"})`, `min({job="api-server"})`, `{__name__=~"http_requests(_histogram)?"}`,
		`{__name__=~"data(_histogram)?"}`, `stddev({label="c"})`, `stdvar({label="c"})`},
	"functions.test":         {`{__name__=~"data(_histogram|_sparse|_empty)?"}`},
	"histograms.test":        {`count(request_duration_seconds)`}, // loaded by load_with_nhcb as _bucket
	"native_histograms.test": {`sum({idx="0"})`, `{__name__=~"hist_values_.*"}`},
	"operators.test":         {`{job="app-server"} == 80`},
}

// floatParts returns a promqltest file with everything that needs native
// histograms turned into comments, line numbers kept: load lines of {{...}}
// samples, load_with_nhcb commands, and every eval that mentions a metric
// such a line loaded (since the last clear), a {{...}} result or a
// histogram_* function. What is left is the file's float part, which hbtsdb
// must pass like any other file. Line numbers in subtest names are those of
// the filtered text.
func floatParts(input string, indirect []string) (string, int) {
	lines := strings.Split(input, "\n")
	hist := map[string]bool{}
	dropped := 0
	drop := func(from, to int) {
		for i := from; i < to; i++ {
			lines[i] = ""
		}
	}
	for i := 0; i < len(lines); {
		l := lines[i]
		if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '#' {
			i++
			continue
		}
		end := i + 1 // the command's indented lines follow it
		for end < len(lines) && lines[end] != "" && (lines[end][0] == ' ' || lines[end][0] == '\t') {
			end++
		}
		word := strings.Fields(l)[0]
		switch {
		case word == "clear":
			hist = map[string]bool{}
		case word == "load_with_nhcb":
			for _, s := range lines[i+1 : end] {
				hist[seriesName(s)] = true
			}
			drop(i, end)
		case strings.HasPrefix(word, "load"):
			for j := i + 1; j < end; j++ {
				if strings.Contains(lines[j], "{{") {
					hist[seriesName(lines[j])] = true
					lines[j] = dropLine // removed below: a blank would end the load
				}
			}
		case strings.HasPrefix(word, "eval"):
			text := strings.Join(lines[i:end], "\n")
			if strings.Contains(text, "{{") || strings.Contains(text, "histogram_") || mentions(text, hist) ||
				slices.ContainsFunc(indirect, func(s string) bool { return strings.Contains(l, s) }) {
				drop(i, end)
				dropped++
			}
		}
		i = end
	}
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == dropLine }), "\n"), dropped
}

const dropLine = "\x00drop"

var identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

func mentions(text string, names map[string]bool) bool {
	for _, w := range identifier.FindAllString(text, -1) {
		if names[w] {
			return true
		}
	}
	return false
}

func seriesName(line string) string {
	s := strings.TrimSpace(line)
	if i := strings.IndexAny(s, "{ \t"); i >= 0 {
		s = s[:i]
	}
	return s
}

// promqlTestdata is the directory of promqltest's files in the module cache.
func promqlTestdata(t *testing.T) string {
	pc := reflect.ValueOf(promqltest.RunTest).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	dir := filepath.Join(filepath.Dir(file), "testdata")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("promqltest's files are not on disk (built with -trimpath?): %v", err)
	}
	return dir
}

// TestPromQLFloatParts runs the float part of every file TestPromQL skips for
// native histograms (see floatParts), but start_timestamps.test, whose float
// part needs start timestamps.
func TestPromQLFloatParts(t *testing.T) {
	dir := promqlTestdata(t)
	var files []string
	for name := range skippedPromQLFiles {
		// Its float part is about start timestamps (@st series), not stored.
		if name != "testdata/start_timestamps.test" {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	for _, b := range backendsForPromQL() {
		for _, compacted := range []bool{false, true} {
			t.Run(storageName(b, compacted), func(t *testing.T) {
				t.Parallel()
				newStorage, compactedRows := storages(t, b, compacted)
				defer checkCompacted(t, compacted, compactedRows)
				engine := newEngine(t)
				for _, name := range files {
					content, err := os.ReadFile(filepath.Join(dir, filepath.Base(name)))
					if err != nil {
						t.Fatal(err)
					}
					input, dropped := floatParts(string(content), indirectHistogramEvals[filepath.Base(name)])
					t.Run(name, func(t *testing.T) {
						t.Logf("%d evals dropped for native histograms", dropped)
						promqltest.RunTestWithStorage(t, input, engine, newStorage)
					})
				}
			})
		}
	}
}
