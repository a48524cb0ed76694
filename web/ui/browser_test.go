package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// The browser test runs Debian's chromium (headless) against the page. Under
// `make test` (TSDB_TEST_REQUIRE_E2E=1) a missing browser is a failure;
// elsewhere the test skips and says how to get one.
//
// TSDB_TEST_CHROMIUM names the browser binary (default: chromium,
// chromium-browser or google-chrome on $PATH). TSDB_TEST_UI_SCREENSHOT, when
// set, is a path the test also writes its screenshot to (docs/query-page.md
// says how docs/query-page.png is refreshed that way).
const (
	envChromium   = "TSDB_TEST_CHROMIUM"
	envRequireE2E = "TSDB_TEST_REQUIRE_E2E"
	envScreenshot = "TSDB_TEST_UI_SCREENSHOT"
)

func chromium(t *testing.T) string {
	t.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome"}
	if p := os.Getenv(envChromium); p != "" {
		names = []string{p}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no browser for the query page's test: none of %v is on $PATH "+
		"(apt-get install chromium, as .ci/run does, or set $%s)", names, envChromium)
	testenv.Missing(t, envRequireE2E, msg)
	return ""
}

// load is one host's node_load5 at minute k of the hour before the fixture's
// end: smooth curves, rounded to hundredths so that the table shows short numbers.
func load(host string, k int) float64 {
	x := float64(k)
	var v float64
	switch host {
	case "web1":
		v = 0.9 + 0.5*math.Sin(x/6)
	case "web2":
		v = 1.7 + 0.4*math.Cos(x/9)
	default:
		v = 2.6 + 0.3*math.Sin(x/4)
	}
	return math.Round(v*100) / 100
}

var hosts = []string{"db1", "web1", "web2"}

// startServer serves the router (the page and the API) over a db.DB on a fresh
// embedded store, and writes an hour of node_load1 and node_load5 for three
// hosts through /api/put, one sample a minute, the last at end.
func startServer(t *testing.T, end time.Time) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := embedded.Open(ctx, t.TempDir(), embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	settings := schema.DefaultEmbeddedSettings()
	opts := schema.DefaultTableOptions()
	opts.Salts = settings.Salts
	if err := provision.Create(ctx, st, settings, opts); err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(ctx, db.Options{Store: st, Settings: settings, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	h, err := promapi.NewRouter(promapi.Options{DB: promapi.StaticDB(d),
		BuildInfo: promapi.BuildInfo{Version: "3.16.0", Branch: "hbtsdb-dev"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	type point struct {
		Metric    string            `json:"metric"`
		Timestamp int64             `json:"timestamp"`
		Value     float64           `json:"value"`
		Tags      map[string]string `json:"tags"`
	}
	var points []point
	for _, host := range hosts {
		for k := range 60 {
			ts := end.Add(time.Duration(k-59) * time.Minute).Unix()
			tags := map[string]string{"host": host, "job": "node"}
			points = append(points, point{"node_load5", ts, load(host, k), tags},
				point{"node_load1", ts, load(host, k) * 1.1, tags})
		}
	}
	body, err := json.Marshal(points)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(srv.URL+"/api/put", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("/api/put: %s", resp.Status)
	}
	return srv.URL
}

// TestQueryPageInBrowser drives the page as a person would: types a query with
// the completion's help, runs it as a range query (a chart and a table of its
// series), then as an instant query (a table of values), and checks what a bad
// query and a query with an info annotation show. It fails on any JavaScript
// exception or console error.
func TestQueryPageInBrowser(t *testing.T) {
	exe := chromium(t)
	end := time.Now().Truncate(time.Minute)
	base := startServer(t, end)

	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe), chromedp.WindowSize(1280, 860), chromedp.Flag("lang", "en-US"))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses to run as root
	}
	// The test's context bounds every wait: no step sleeps, each waits for
	// what the page shows, and a page that never shows it fails the test.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(ctx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()

	// Every uncaught exception and console error of the page fails the test.
	var mu sync.Mutex
	var jsErrors []string
	consoleDone := make(chan struct{})
	messages := chromedp.Console(ctx)
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			// Source is empty for the page's own console calls; the browser's
			// log says "Failed to load resource" for the bad query's 400,
			// which is expected.
			if m.IsException() || m.Type == chromedp.ConsoleError && m.Source == "" {
				mu.Lock()
				jsErrors = append(jsErrors, m.String())
				mu.Unlock()
			}
		}
	}()
	defer func() {
		cancelBrowser()
		<-consoleDone
		mu.Lock()
		defer mu.Unlock()
		for _, e := range jsErrors {
			t.Errorf("the page's console: %s", e)
		}
	}()

	endParam := end.UTC().Format(time.RFC3339)
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			// What the page showed, to tell a slow page from a wrong one.
			editorText, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#editor .cm-content")?.textContent ?? "(no editor)"`))
			completions, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll(".cm-tooltip-autocomplete li")].map(li => li.textContent).join(", ")`))
			t.Fatalf("%s: %v (the editor holds %q; completions offered: %q)", what, err, editorText, completions)
		}
	}
	type row struct{ Series, Value string }
	rows := func(what string) []row {
		t.Helper()
		return value(t, ctx, what, chromedp.Evaluate[[]row](`[...document.querySelectorAll('#table tbody tr')].map(r => ({
			Series: r.querySelector('td.labels').textContent, Value: r.querySelector('td.value').textContent}))`))
	}
	want := func(metric string) []row {
		var out []row
		for _, host := range []string{"web1", "web2"} {
			out = append(out, row{fmt.Sprintf(`%s{host="%s", job="node"}`, metric, host),
				strconv.FormatFloat(load(host, 59), 'f', -1, 64)})
		}
		return out
	}
	// completionFor is the completion list's entry labelled label (an XPath,
	// which a plain string selector may be) once the list has been filtered
	// by typed, the whole prefix (CodeMirror marks the matched characters): the
	// list is re-rendered as each key arrives, and a click on an entry of an
	// earlier rendering can land outside the editor and take its focus away.
	completionFor := func(label, typed string) string {
		return fmt.Sprintf(`//div[contains(@class,"cm-tooltip-autocomplete")]//li[.//span[contains(@class,"cm-completionLabel") and string(.)=%q]`+
			`//span[contains(@class,"cm-completionMatchedText") and string(.)=%q]]`, label, typed)
	}
	// editorHolds waits until the editor's text is text.
	editorHolds := func(text string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector("#editor .cm-content").textContent === %q`, text))
	}
	editor := chromedp.CSS(`#editor .cm-content`)
	noCompletions := chromedp.CSS(`.cm-tooltip-autocomplete`)

	// A range query over the last hour at one point a minute; the expression
	// is typed, with the completion's metric and label names.
	do("open the page",
		chromedp.Navigate(base+"/?mode=range&range=1h&step=1m&end="+url.QueryEscape(endParam)),
		chromedp.WaitVisible(editor),
		chromedp.Click(editor),
	)
	// complete takes the completion label for what was typed (the editor then
	// holds typedText), by a click, not Enter: for a moment after the list
	// opens, Enter runs the query rather than taking a completion (CodeMirror's
	// interactionDelay), as it should for a person typing fast. Completions
	// arrive from the API while the list is open, and a click on an entry the
	// update replaces is lost (the list closes, nothing is taken, the editor may
	// lose the focus): then the editor is focused, the cursor put back (toCursor:
	// keys after End) and the last letter typed again, which opens the list
	// again, and the entry is clicked again, until the editor holds want or the
	// test's context ends.
	complete := func(typed, typedText, label, want string, toCursor ...string) {
		t.Helper()
		for {
			do("complete "+typed+" with "+label,
				chromedp.WaitVisible(completionFor(label, typed)),
				chromedp.Click(completionFor(label, typed)),
				chromedp.WaitNotPresent(noCompletions),
			)
			got := value(t, ctx, "read the editor", chromedp.TextContent(editor))
			if got == want {
				return
			} else if got != typedText {
				t.Fatalf("after taking the completion %s, the editor holds %q, want %q", label, got, want)
			}
			t.Logf("the click on the completion %s was lost while the list updated; typing its last letter again", label)
			last := typed[len(typed)-1:]
			retype := []chromedp.Action[chromedp.Void]{chromedp.Click(editor), chromedp.KeyEvent(kb.End)}
			for _, k := range toCursor {
				retype = append(retype, chromedp.KeyEvent(k))
			}
			retype = append(retype, chromedp.KeyEvent(kb.Backspace), editorHolds(strings.Replace(typedText, typed, typed[:len(typed)-1], 1)),
				chromedp.KeyEvent(last), editorHolds(typedText))
			do("open the completion list again", retype...)
		}
	}
	do("type a metric name's beginning", chromedp.KeyEvent("node_loa"), editorHolds("node_loa"))
	complete("node_loa", "node_loa", "node_load5", "node_load5")
	do("type a label name's beginning", chromedp.KeyEvent("{ho"), editorHolds("node_load5{ho}"))
	complete("ho", "node_load5{ho}", "host", "node_load5{host}", kb.ArrowLeft)
	do("finish the expression", chromedp.KeyEvent(`!="db1`), chromedp.KeyEvent(kb.Escape))
	expr := value(t, ctx, "read the editor", chromedp.TextContent(editor))
	if want := `node_load5{host!="db1"}`; expr != want {
		t.Fatalf("the editor holds %q, want %q", expr, want)
	}
	do("run the range query",
		chromedp.Click(chromedp.CSS(`#run`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart[data-series="2"] canvas`)),
		chromedp.WaitVisible(chromedp.CSS(`#table[data-result="matrix"] tbody tr`)),
	)
	if got := rows("read the range table"); !slices.Equal(got, want("node_load5")) {
		t.Errorf("the range query's table: %+v, want %+v (each series' last value)", got, want("node_load5"))
	}
	if w := value(t, ctx, "measure the chart", chromedp.Evaluate[int](`document.querySelector('#chart canvas').width`)); w < 500 {
		t.Errorf("the chart's canvas is %d pixels wide", w)
	}
	search := value(t, ctx, "read the URL", chromedp.Evaluate[string](`location.search`))
	if q, err := url.ParseQuery(strings.TrimPrefix(search, "?")); err != nil || q.Get("q") != expr ||
		q.Get("mode") != "range" || q.Get("range") != "1h" || q.Get("step") != "1m" || q.Get("end") != endParam {
		t.Errorf("the URL's query string is %q: want the expression and the form's state in it", search)
	}

	screenshot := value(t, ctx, "take a screenshot", chromedp.FullScreenshot(100))
	path := filepath.Join(t.ArtifactDir(), "query-page.png")
	if err := os.WriteFile(path, screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if p := os.Getenv(envScreenshot); p != "" {
		if err := os.WriteFile(p, screenshot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot also written to %s", p)
	}

	// The same expression as an instant query at the end: a table of values.
	do("run the instant query",
		chromedp.Click(chromedp.CSS(`#mode-instant`)),
		chromedp.WaitVisible(chromedp.CSS(`#table[data-result="vector"] tbody tr`)),
	)
	if got := rows("read the instant table"); !slices.Equal(got, want("node_load5")) {
		t.Errorf("the instant query's table: %+v, want %+v", got, want("node_load5"))
	}
	if value(t, ctx, "look for the chart", chromedp.Evaluate[bool](`document.querySelector('#chart').offsetParent !== null`)) {
		t.Error("the chart is still shown for an instant query")
	}

	// A link with a bad query shows the server's error, and no result.
	do("open a bad query's link",
		chromedp.Navigate(base+"/?mode=instant&q="+url.QueryEscape("sum(node_load5")+"&end="+url.QueryEscape(endParam)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .message.error`)),
	)
	msg := value(t, ctx, "read the error", chromedp.TextContent(chromedp.CSS(`#messages .message.error`)))
	if !strings.Contains(msg, "bad_data") || !strings.Contains(msg, "parse error") || !strings.Contains(msg, "unclosed left parenthesis") {
		t.Errorf("the bad query's message is %q, want the parse error", msg)
	}
	if got := rows("read the table after the error"); len(got) != 0 {
		t.Errorf("the table shows %+v after an error", got)
	}

	// A query with an info annotation shows it next to the result.
	do("open a link whose query has an info",
		chromedp.Navigate(base+"/?mode=instant&q="+url.QueryEscape("rate(node_load5[5m])")+"&end="+url.QueryEscape(endParam)),
		chromedp.WaitVisible(chromedp.CSS(`#table[data-result="vector"] tbody tr`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .message.info`)),
	)
	msg = value(t, ctx, "read the info", chromedp.TextContent(chromedp.CSS(`#messages .message.info`)))
	if !strings.Contains(msg, "might not be a counter") {
		t.Errorf("the info shown is %q, want PromQL's 'might not be a counter'", msg)
	}
}

// value runs one action that returns a value, and fails the test on an error.
func value[T any](t *testing.T, ctx context.Context, what string, action chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}
