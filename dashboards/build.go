package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// DatasourceUID is the uid of the Prometheus-type data source that
// provisioning/datasources/hbtsdb.yaml creates; the dashboards' datasource
// variable selects it by default.
const DatasourceUID = "hbtsdb"

// datasourceVar is the name of the dashboards' data source variable: every
// panel and query variable reads from ${datasource}, so a dashboard imported by
// hand works with a data source of any name.
const datasourceVar = "datasource"

// File is one generated dashboard: the name of its JSON file in json/ and the
// dashboard.
type File struct {
	Name      string
	Dashboard dashboard.Dashboard
}

// All builds every dashboard, sorted by file name.
func All() ([]File, error) {
	builders := []struct {
		name  string
		build func() (dashboard.Dashboard, error)
	}{
		{"hbtsdb-hosts.json", Hosts},
		{"hbtsdb-overview.json", Overview},
	}
	var files []File
	for _, b := range builders {
		d, err := b.build()
		if err != nil {
			return nil, fmt.Errorf("dashboards: build %s: %w", b.name, err)
		}
		files = append(files, File{Name: b.name, Dashboard: d})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// Render is d as Grafana's dashboard JSON: indented with two spaces, with a
// final newline. encoding/json writes struct fields in declaration order and
// map keys sorted, so the same dashboard always renders to the same bytes.
func Render(d dashboard.Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep PromQL's <, > and & readable in the JSON
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write renders every dashboard into dir (created if missing) and removes any
// other *.json file there, so that dir holds exactly what All builds. It
// returns the names of the files written.
func Write(dir string) ([]string, error) {
	files, err := All()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dashboards: %w", err)
	}
	keep := map[string]bool{}
	var names []string
	for _, f := range files {
		b, err := Render(f.Dashboard)
		if err != nil {
			return nil, fmt.Errorf("dashboards: render %s: %w", f.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), b, 0o644); err != nil {
			return nil, fmt.Errorf("dashboards: %w", err)
		}
		keep[f.Name] = true
		names = append(names, f.Name)
	}
	stale, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("dashboards: %w", err)
	}
	for _, p := range stale {
		if !keep[filepath.Base(p)] {
			if err := os.Remove(p); err != nil {
				return nil, fmt.Errorf("dashboards: remove stale %s: %w", p, err)
			}
		}
	}
	return names, nil
}

// board is a dashboard under construction: the SDK's builder plus the
// conventions every hbtsdb dashboard shares (the datasource variable, panel
// sizes, query ids).
type board struct {
	b *dashboard.DashboardBuilder
}

func newBoard(uid, title, description string, tags ...string) *board {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags(tags).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder(datasourceVar).
			Label("Data source").
			Type("prometheus").
			Current(dashboard.VariableOption{
				Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr(DatasourceUID)},
				Value: dashboard.StringOrArrayOfString{String: cog.ToPtr(DatasourceUID)},
			}))
	return &board{b: b}
}

// labelValuesVar is a query variable with Grafana's label_values(selector,
// label) query: multi-valued, with "All", refreshed when the time range changes.
// Panels match it with label=~"$name".
func (d *board) labelValuesVar(name, label, selector string) {
	q := fmt.Sprintf("label_values(%s, %s)", selector, label)
	d.b.WithVariable(dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortNaturalAsc).
		Multi(true).
		IncludeAll(true).
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
			Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")},
		}))
}

func (d *board) row(title string) {
	d.b.WithRow(dashboard.NewRowBuilder(title))
}

func (d *board) panel(p cog.Builder[dashboard.Panel]) {
	d.b.WithPanel(p)
}

// build returns the dashboard with panel ids numbered in layout order (rows
// included), so that the JSON does not depend on Grafana assigning them.
func (d *board) build() (dashboard.Dashboard, error) {
	dash, err := d.b.Build()
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	id := uint32(0)
	for i := range dash.Panels {
		id++
		switch p := dash.Panels[i]; {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(id)
		case p.RowPanel != nil:
			p.RowPanel.Id = id
			for j := range p.RowPanel.Panels {
				id++
				p.RowPanel.Panels[j].Id = cog.ToPtr(id)
			}
		}
	}
	return dash, nil
}

func datasource() common.DataSourceRef {
	return common.DataSourceRef{
		Type: cog.ToPtr("prometheus"),
		Uid:  cog.ToPtr("${" + datasourceVar + "}"),
	}
}

// q is one PromQL query of a panel and its legend ("{{label}}" templates).
type q struct {
	expr, legend string
}

// rangeTargets are a graph panel's queries: range queries, ids A, B, ...
func rangeTargets(qs []q) []cog.Builder[variants.Dataquery] {
	var out []cog.Builder[variants.Dataquery]
	for i, x := range qs {
		out = append(out, prometheus.NewDataqueryBuilder().
			RefId(refID(i)).
			Datasource(datasource()).
			Expr(x.expr).
			LegendFormat(legendOrAuto(x.legend)).
			Range())
	}
	return out
}

// instantTargets are a stat or table panel's queries: instant queries, in
// Grafana's table format when table is set.
func instantTargets(table bool, qs []q) []cog.Builder[variants.Dataquery] {
	var out []cog.Builder[variants.Dataquery]
	for i, x := range qs {
		t := prometheus.NewDataqueryBuilder().
			RefId(refID(i)).
			Datasource(datasource()).
			Expr(x.expr).
			LegendFormat(legendOrAuto(x.legend)).
			Instant()
		if table {
			t.Format(prometheus.PromQueryFormatTable)
		}
		out = append(out, t)
	}
	return out
}

func legendOrAuto(l string) string {
	if l == "" {
		return "__auto"
	}
	return l
}

func refID(i int) string { return string(rune('A' + i)) }

// Panel sizes on Grafana's 24-column grid.
const (
	graphW, graphH = 8, 8
	statW, statH   = 4, 4
)

// graph is a time-series panel of range queries.
func graph(title, unit, description string, qs ...q) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Unit(unit).
		Span(graphW).
		Height(graphH).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	return p.Targets(rangeTargets(qs))
}

// single is a stat panel: the value of one instant query.
func single(title, unit, description string, x q) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Unit(unit).
		Span(statW).
		Height(statH).
		GraphMode(common.BigValueGraphModeNone).
		ColorMode(common.BigValueColorModeNone).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Targets(instantTargets(false, []q{x}))
}

// selector joins PromQL matchers into a selector's braces.
func selector(matchers ...string) string {
	return "{" + strings.Join(matchers, ", ") + "}"
}
