package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// jsonDir is where the committed dashboards are, relative to this package.
const jsonDir = "json"

// The parts of Grafana's dashboard JSON the tests read: what Grafana itself
// reads to run the queries. The tests read the committed files, not the Go
// values, so that they check what Grafana gets.
type dashJSON struct {
	UID        string      `json:"uid"`
	Title      string      `json:"title"`
	Panels     []panelJSON `json:"panels"`
	Templating struct {
		List []varJSON `json:"list"`
	} `json:"templating"`
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panelJSON struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Datasource *dsRef       `json:"datasource"`
	Targets    []targetJSON `json:"targets"`
	Panels     []panelJSON  `json:"panels"` // a collapsed row's panels
}

type targetJSON struct {
	RefID      string `json:"refId"`
	Expr       string `json:"expr"`
	Instant    bool   `json:"instant"`
	Range      bool   `json:"range"`
	Format     string `json:"format"`
	Datasource *dsRef `json:"datasource"`
}

type varJSON struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Query      json.RawMessage `json:"query"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	Datasource *dsRef          `json:"datasource"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// allPanels is every panel of d, rows' nested panels included, in order.
func (d dashJSON) allPanels() []panelJSON {
	var out []panelJSON
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// queryVar is a query variable's label_values(selector, label).
type queryVar struct {
	name, selector, label string
	multi                 bool
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// queryVars are d's query variables in dashboard order (the order Grafana
// resolves them in, so a variable may use the ones before it).
func (d dashJSON) queryVars() ([]queryVar, error) {
	var out []queryVar
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			return nil, fmt.Errorf("variable %s: query is not a string: %s", v.Name, v.Query)
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
		}
		out = append(out, queryVar{name: v.Name, selector: m[1], label: m[2], multi: v.Multi || v.IncludeAll})
	}
	return out, nil
}

// loadCommitted reads every committed dashboard, by uid.
func loadCommitted(t *testing.T) map[string]dashJSON {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(jsonDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no dashboards in %s: run `make dashboards`", jsonDir)
	}
	out := map[string]dashJSON{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var d dashJSON
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[d.UID] = d
	}
	return out
}

// Grafana's built-in variables, as the tests substitute them: $__rate_interval
// is at least four scrape intervals (the data source's timeInterval, 15s).
func builtins(rangeSeconds int64) map[string]string {
	return map[string]string{
		"__rate_interval": "1m",
		"__interval":      "15s",
		"__interval_ms":   "15000",
		"__range":         fmt.Sprintf("%ds", rangeSeconds),
		"__range_s":       fmt.Sprint(rangeSeconds),
		"__range_ms":      fmt.Sprint(rangeSeconds * 1000),
	}
}

var varRefRE = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)`)

// interpolate substitutes vars into expr the way Grafana writes them into a
// query: $name, ${name}, ${name:format} (format ignored) and [[name]]. A
// reference to an unknown variable stays as it is, and PromQL will not parse it.
func interpolate(expr string, vars map[string]string) string {
	return varRefRE.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRefRE.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		if v, ok := vars[name]; ok {
			return v
		}
		return ref
	})
}

// regexValue is how Grafana's Prometheus data source writes the values of a
// multi-value (or "All") variable into a query: each value regex-escaped for
// use inside a PromQL string (prometheusSpecialRegexEscape: a backslash and
// the escaped character, the backslash itself doubled for the string), several
// values as (a|b).
func regexValue(values []string) string {
	esc := make([]string, len(values))
	for i, v := range values {
		v = strings.ReplaceAll(v, `\`, `\\\\`)
		var b strings.Builder
		for _, r := range v {
			if strings.ContainsRune(`$^*{}[]'+?.()|`, r) {
				b.WriteString(`\\`)
			}
			b.WriteRune(r)
		}
		esc[i] = b.String()
	}
	if len(esc) == 1 {
		return esc[0]
	}
	return "(" + strings.Join(esc, "|") + ")"
}

// metricNames are the metric names d's panel queries select, sorted.
func metricNames(t *testing.T, d dashJSON) []string {
	t.Helper()
	vars := builtins(3600)
	qvars, err := d.queryVars()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range qvars {
		vars[v.name] = "x"
	}
	p := parser.NewParser(parser.Options{})
	seen := map[string]bool{}
	for _, panel := range d.allPanels() {
		for _, tg := range panel.Targets {
			expr, err := p.ParseExpr(interpolate(tg.Expr, vars))
			if err != nil {
				t.Fatalf("%s %s: %q: %v", panel.Title, tg.RefID, tg.Expr, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					seen[vs.Name] = true
				}
				return nil
			})
		}
	}
	return keys(seen)
}
