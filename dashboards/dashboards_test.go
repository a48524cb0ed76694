package dashboards

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v2"
)

func TestGeneratedJSONIsCommitted(t *testing.T) {
	dir := t.TempDir()
	names, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := filepath.Glob(filepath.Join(jsonDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, p := range committed {
		have = append(have, filepath.Base(p))
	}
	if strings.Join(have, " ") != strings.Join(names, " ") {
		t.Errorf("dashboards/json holds %v, the generator writes %v: run `make dashboards` and commit dashboards/json", have, names)
	}
	for _, n := range names {
		want, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(jsonDir, n))
		if err != nil {
			t.Errorf("dashboards/json/%s: %v: run `make dashboards` and commit dashboards/json", n, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("dashboards/json/%s differs from what dashboards/gen writes (first difference at line %d): "+
				"the JSON is generated, do not edit it; run `make dashboards` and commit dashboards/json", n, firstDiffLine(got, want))
		}
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

func TestGenerationIsDeterministic(t *testing.T) {
	render := func() map[string][]byte {
		files, err := All()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, f := range files {
			b, err := Render(f.Dashboard)
			if err != nil {
				t.Fatal(err)
			}
			out[f.Name] = b
		}
		return out
	}
	first := render()
	for i := 0; i < 5; i++ {
		for name, b := range render() {
			if !bytes.Equal(b, first[name]) {
				t.Fatalf("%s renders differently from one run to the next", name)
			}
		}
	}
}

func TestDashboardsAreWellFormed(t *testing.T) {
	boards := loadCommitted(t)
	wantTitles := map[string]string{OverviewUID: "hbtsdb overview", HostsUID: "Hosts"}
	if len(boards) != len(wantTitles) {
		t.Errorf("committed dashboards %v, want the uids of %v", keys(boards), wantTitles)
	}
	for uid, title := range wantTitles {
		t.Run(uid, func(t *testing.T) {
			d, ok := boards[uid]
			if !ok {
				t.Fatalf("no committed dashboard with uid %s", uid)
			}
			if d.Title != title {
				t.Errorf("title %q, want %q", d.Title, title)
			}
			checkDatasourceVariable(t, d)
			ids := map[int]string{}
			var boxes []panelJSON
			for _, p := range d.allPanels() {
				if p.ID <= 0 {
					t.Errorf("panel %q has no id", p.Title)
				} else if other, dup := ids[p.ID]; dup {
					t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
				}
				ids[p.ID] = p.Title
				if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
					t.Errorf("panel %q: gridPos %+v is outside the 24-column grid", p.Title, g)
				}
				for _, o := range boxes {
					if overlap(o, p) {
						t.Errorf("panels %q %+v and %q %+v overlap", o.Title, o.GridPos, p.Title, p.GridPos)
					}
				}
				boxes = append(boxes, p)
				if p.Type == "row" {
					continue
				}
				checkPanel(t, p)
			}
		})
	}
}

func checkDatasourceVariable(t *testing.T, d dashJSON) {
	t.Helper()
	for _, v := range d.Templating.List {
		if v.Name != datasourceVar {
			continue
		}
		if v.Type != "datasource" || string(v.Query) != `"prometheus"` || string(v.Current.Value) != `"`+DatasourceUID+`"` {
			t.Errorf("variable %s: type %q, query %s, current %s; want a prometheus datasource variable on %q",
				v.Name, v.Type, v.Query, v.Current.Value, DatasourceUID)
		}
		return
	}
	t.Errorf("no %q variable", datasourceVar)
}

// checkPanel: every panel queries ${datasource}; graphs run range queries, stats
// and tables instant ones (tables in table format), each with its own refId.
func checkPanel(t *testing.T, p panelJSON) {
	t.Helper()
	wantDS := dsRef{Type: "prometheus", UID: "${" + datasourceVar + "}"}
	if p.Datasource == nil || *p.Datasource != wantDS {
		t.Errorf("panel %q: datasource %+v, want %+v", p.Title, p.Datasource, wantDS)
	}
	if len(p.Targets) == 0 {
		t.Errorf("panel %q has no queries", p.Title)
	}
	refs := map[string]bool{}
	for _, tg := range p.Targets {
		if tg.RefID == "" || refs[tg.RefID] {
			t.Errorf("panel %q: query refId %q is empty or repeated", p.Title, tg.RefID)
		}
		refs[tg.RefID] = true
		if strings.TrimSpace(tg.Expr) == "" {
			t.Errorf("panel %q query %s: empty expr", p.Title, tg.RefID)
		}
		if tg.Datasource == nil || *tg.Datasource != wantDS {
			t.Errorf("panel %q query %s: datasource %+v, want %+v", p.Title, tg.RefID, tg.Datasource, wantDS)
		}
		switch p.Type {
		case "timeseries":
			if !tg.Range || tg.Instant {
				t.Errorf("graph %q query %s: range=%v instant=%v, want a range query", p.Title, tg.RefID, tg.Range, tg.Instant)
			}
		case "stat", "table":
			if tg.Range || !tg.Instant {
				t.Errorf("%s %q query %s: range=%v instant=%v, want an instant query", p.Type, p.Title, tg.RefID, tg.Range, tg.Instant)
			}
			if p.Type == "table" && tg.Format != "table" {
				t.Errorf("table %q query %s: format %q, want table", p.Title, tg.RefID, tg.Format)
			}
		default:
			t.Errorf("panel %q: type %q, want timeseries, stat or table", p.Title, p.Type)
		}
	}
}

func overlap(a, b panelJSON) bool {
	ga, gb := a.GridPos, b.GridPos
	return ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H
}

// overviewMetrics are the metric names the overview may use: the /metrics
// contract of tsdb serve — hbtsdb's own, the PromQL engine's, Go's
// and the process's.
var overviewMetrics = []string{
	"hbtsdb_http_requests_total",
	"hbtsdb_http_request_duration_seconds_bucket",
	"hbtsdb_http_request_duration_seconds_sum",
	"hbtsdb_http_request_duration_seconds_count",
	"hbtsdb_write_requests_total",
	"hbtsdb_samples_written_total",
	"hbtsdb_samples_rejected_total",
	"hbtsdb_series_created_total",
	"hbtsdb_series_registry_lookups_total",
	"hbtsdb_kv_operation_duration_seconds_bucket",
	"hbtsdb_kv_operation_duration_seconds_count",
	"hbtsdb_kv_operation_errors_total",
	"prometheus_engine_queries",
	"prometheus_engine_query_duration_seconds",
	"hbtsdb_compaction_rounds_total",
	"hbtsdb_compaction_samples_total",
	"hbtsdb_compaction_last_success_timestamp_seconds",
	"go_memstats_heap_inuse_bytes",
	"process_resident_memory_bytes",
	"process_cpu_seconds_total",
	"go_goroutines",
}

// hostsMetrics are the node-exporter metrics the Hosts dashboard may use.
var hostsMetrics = []string{
	"node_uname_info",
	"node_cpu_seconds_total",
	"node_load1",
	"node_memory_MemAvailable_bytes",
	"node_memory_MemTotal_bytes",
	"node_filesystem_avail_bytes",
	"node_filesystem_size_bytes",
	"node_disk_read_bytes_total",
	"node_disk_written_bytes_total",
	"node_network_receive_bytes_total",
	"node_network_transmit_bytes_total",
}

// conventions says what every query of a dashboard must look like.
type conventions struct {
	metrics []string
	// scope are matchers every selector must have, as written in the
	// dashboard (with variables).
	scope []string
	// groupBy are the labels aggregations may group by.
	groupBy []string
}

var dashboardConventions = map[string]conventions{
	OverviewUID: {
		metrics: overviewMetrics,
		scope:   []string{`job="hbtsdb"`, `instance=~"$instance"`},
		groupBy: []string{"protocol", "reason", "outcome", "handler", "code", "backend", "operation", "result", "slice", "le", "instance"},
	},
	HostsUID: {
		metrics: hostsMetrics,
		scope:   []string{`host=~"$host"`},
		groupBy: []string{"host", "mode", "device", "mountpoint", "le"},
	},
}

// literalRangeRE finds a range or subquery written as a literal duration
// ([5m], [1h:1m]) instead of $__rate_interval or $__range.
var literalRangeRE = regexp.MustCompile(`\[\s*\d`)

// TestQueriesFollowConventions parses every query with Prometheus' PromQL
// parser (variables substituted) and checks that it reads only the metrics the
// dashboard is about, that every selector is scoped by the dashboard's
// variables, that aggregations group by labels those metrics have, and that
// ranges come from Grafana ($__rate_interval, $__range), never a fixed window.
func TestQueriesFollowConventions(t *testing.T) {
	boards := loadCommitted(t)
	p := parser.NewParser(parser.Options{})
	for uid, conv := range dashboardConventions {
		t.Run(uid, func(t *testing.T) {
			d, ok := boards[uid]
			if !ok {
				t.Fatalf("no committed dashboard with uid %s", uid)
			}
			vars := builtins(3600)
			qvars, err := d.queryVars()
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range qvars {
				vars[v.name] = "sentinel_" + v.name
				if _, err := p.ParseMetricSelector(interpolate(v.selector, vars)); err != nil {
					t.Errorf("variable %s: selector %q: %v", v.name, v.selector, err)
				}
			}
			var scope []*labels.Matcher
			for _, s := range conv.scope {
				ms, err := p.ParseMetricSelector("{" + interpolate(s, vars) + "}")
				if err != nil {
					t.Fatalf("scope %s: %v", s, err)
				}
				scope = append(scope, ms...)
			}
			used := map[string]bool{}
			for _, panel := range d.allPanels() {
				for _, tg := range panel.Targets {
					where := panel.Title + " " + tg.RefID
					if literalRangeRE.MatchString(tg.Expr) {
						t.Errorf("%s: %q has a fixed range; use $__rate_interval or $__range", where, tg.Expr)
					}
					expr, err := p.ParseExpr(interpolate(tg.Expr, vars))
					if err != nil {
						t.Errorf("%s: %q does not parse: %v", where, tg.Expr, err)
						continue
					}
					parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
						switch n := n.(type) {
						case *parser.VectorSelector:
							used[n.Name] = true
							if !contains(conv.metrics, n.Name) {
								t.Errorf("%s: metric %q is not one of %v", where, n.Name, conv.metrics)
							}
							for _, want := range scope {
								if !hasMatcher(n.LabelMatchers, want) {
									t.Errorf("%s: selector %s lacks %s", where, n, want)
								}
							}
						case *parser.AggregateExpr:
							for _, l := range n.Grouping {
								if !contains(conv.groupBy, l) {
									t.Errorf("%s: %s groups by %q, not one of %v", where, n.Op, l, conv.groupBy)
								}
							}
						}
						return nil
					})
				}
			}
			var unused []string
			for _, m := range conv.metrics {
				if !used[m] {
					unused = append(unused, m)
				}
			}
			if len(unused) > 0 {
				t.Errorf("no panel shows %v", unused)
			}
		})
	}
}

func hasMatcher(ms []*labels.Matcher, want *labels.Matcher) bool {
	for _, m := range ms {
		if m.Name == want.Name && m.Type == want.Type && m.Value == want.Value {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestProvisioning checks the provisioning files against the dashboards: the
// data source the dashboards select by default exists, is a Prometheus one at
// tsdb's default address, and the dashboard provider loads files.
func TestProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, Access, URL string
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join("provisioning", "datasources", "hbtsdb.yaml"), &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 {
		t.Fatalf("datasources: apiVersion %d, %d data sources; want apiVersion 1 and one", ds.APIVersion, len(ds.Datasources))
	}
	if got := ds.Datasources[0]; got.UID != DatasourceUID || got.Type != "prometheus" ||
		got.Access != "proxy" || got.URL != "http://localhost:9201" {
		t.Errorf("data source %+v, want uid %s, type prometheus, access proxy, url http://localhost:9201", got, DatasourceUID)
	}

	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type string
			Options    struct {
				Path string
			}
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join("provisioning", "dashboards", "hbtsdb.yaml"), &dp)
	if dp.APIVersion != 1 || len(dp.Providers) != 1 {
		t.Fatalf("dashboards: apiVersion %d, %d providers; want apiVersion 1 and one", dp.APIVersion, len(dp.Providers))
	}
	if got := dp.Providers[0]; got.Type != "file" || got.Options.Path != "$HBTSDB_DASHBOARDS_DIR" {
		t.Errorf("provider %+v, want type file, path $HBTSDB_DASHBOARDS_DIR", got)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("HBTSDB_DASHBOARDS_DIR")) {
		t.Error("README.md does not say how to set HBTSDB_DASHBOARDS_DIR")
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
