package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
)

// HostsUID is the uid of the "Hosts" dashboard.
const HostsUID = "hbtsdb-hosts"

// HostLabel is the label the Hosts dashboard groups by: hbtsdb's first host
// label (--schema.host-labels, "host,instance"), so that one host's panels read
// the rows the store keeps together.
const HostLabel = "host"

// node is a selector of node-exporter metric on the hosts the $host variable
// selects, with extra matchers.
func node(metric string, extra ...string) string {
	return metric + selector(append([]string{HostLabel + `=~"$host"`}, extra...)...)
}

// realFS leaves out the in-memory and read-only image filesystems node
// exporter also reports.
const realFS = `fstype!~"tmpfs|ramfs|overlay|squashfs|nsfs"`

// Hosts is "Hosts": node-exporter metrics per host.
func Hosts() (dashboard.Dashboard, error) {
	d := newBoard(HostsUID, "Hosts",
		"node-exporter metrics per host (the host label): CPU, memory, disk, network and the last readings.",
		"hbtsdb", "node-exporter")
	d.labelValuesVar("host", HostLabel, "node_uname_info")

	cpuBusy := "1 - avg by (host) (" + rate(node("node_cpu_seconds_total", `mode="idle"`)) + ")"
	memUsed := "1 - max by (host) (" + node("node_memory_MemAvailable_bytes") + ") / max by (host) (" +
		node("node_memory_MemTotal_bytes") + ")"

	d.row("Last readings")
	d.panel(lastReadings(
		column{"CPU busy", "percentunit", q{cpuBusy, ""}},
		column{"Memory used", "percentunit", q{memUsed, ""}},
		column{"Memory available", "bytes", q{"max by (host) (" + node("node_memory_MemAvailable_bytes") + ")", ""}},
		column{"/ available", "bytes", q{"max by (host) (" + node("node_filesystem_avail_bytes", `mountpoint="/"`) + ")", ""}},
		column{"Load 1m", "short", q{"max by (host) (" + node("node_load1") + ")", ""}},
		column{"Last reading", "dateTimeFromNow", q{"max by (host) (timestamp(" + node("node_uname_info") + ")) * 1000", ""}},
	))

	d.row("CPU")
	d.panel(graph("CPU busy", "percentunit", "Share of CPU time not idle, averaged over the host's CPUs.",
		q{cpuBusy, "{{host}}"}).Min(0).Max(1))
	d.panel(graph("CPU by mode", "percentunit", "Share of CPU time per mode (idle left out), averaged over the host's CPUs.",
		q{"avg by (host, mode) (" + rate(node("node_cpu_seconds_total", `mode!="idle"`)) + ")", "{{host}} {{mode}}"}).Min(0))
	d.panel(graph("Load average", "short", "1-minute load average.",
		q{node("node_load1"), "{{host}}"}).Min(0))

	d.row("Memory")
	d.panel(graph("Memory used", "bytes", "MemTotal - MemAvailable.",
		q{node("node_memory_MemTotal_bytes") + " - " + node("node_memory_MemAvailable_bytes"), "{{host}}"}).Min(0))
	d.panel(graph("Memory used %", "percentunit", "1 - MemAvailable / MemTotal.",
		q{"1 - " + node("node_memory_MemAvailable_bytes") + " / " + node("node_memory_MemTotal_bytes"), "{{host}}"}).Min(0).Max(1))
	d.panel(graph("Memory available", "bytes", "MemAvailable: memory that can be had without swapping.",
		q{node("node_memory_MemAvailable_bytes"), "{{host}}"}).Min(0))

	d.row("Disk")
	d.panel(graph("Filesystem available", "bytes", "Space available to unprivileged users per mount point.",
		q{node("node_filesystem_avail_bytes", realFS), "{{host}} {{mountpoint}}"}).Min(0))
	d.panel(graph("Filesystem used %", "percentunit", "1 - available / size per mount point.",
		q{"1 - " + node("node_filesystem_avail_bytes", realFS) + " / " + node("node_filesystem_size_bytes", realFS),
			"{{host}} {{mountpoint}}"}).Min(0).Max(1))
	d.panel(graph("Disk I/O", "Bps", "Bytes read (positive) and written (negative) per second per device.",
		q{"sum by (host, device) (" + rate(node("node_disk_read_bytes_total")) + ")", "{{host}} {{device}} read"},
		q{"-sum by (host, device) (" + rate(node("node_disk_written_bytes_total")) + ")", "{{host}} {{device}} written"}))

	d.row("Network")
	d.panel(graph("Network received", "Bps", "Bytes received per second per interface (loopback left out).",
		q{"sum by (host, device) (" + rate(node("node_network_receive_bytes_total", `device!="lo"`)) + ")", "{{host}} {{device}}"}).Min(0).Span(12))
	d.panel(graph("Network transmitted", "Bps", "Bytes sent per second per interface (loopback left out).",
		q{"sum by (host, device) (" + rate(node("node_network_transmit_bytes_total", `device!="lo"`)) + ")", "{{host}} {{device}}"}).Min(0).Span(12))

	return d.build()
}

// column is one value column of the last-readings table: its header, unit and
// the instant query (one series per host) it shows.
type column struct {
	name, unit string
	q          q
}

// lastReadings is a table with one row per host and the newest value of each
// column's instant query: Grafana's table format gives one frame per query
// (Time, host, "Value #A"), the merge transformation joins them on host, and
// organize drops Time and names the value columns.
func lastReadings(cols ...column) *table.PanelBuilder {
	var qs []q
	rename := map[string]string{}
	order := map[string]int{HostLabel: 0}
	for i, c := range cols {
		qs = append(qs, c.q)
		rename["Value #"+refID(i)] = c.name
		order["Value #"+refID(i)] = i + 1
	}
	p := table.NewPanelBuilder().
		Title("Last readings").
		Description("The newest value of a few gauges per host (instant queries).").
		Datasource(datasource()).
		Span(24).
		Height(graphH).
		CellHeight(common.TableCellHeightSm).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName(HostLabel),
		}).
		Targets(instantTargets(true, qs)).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]bool{"Time": true},
			"indexByName":   order,
			"renameByName":  rename,
		}})
	for _, c := range cols {
		p.OverrideByName(c.name, []dashboard.DynamicConfigValue{{Id: "unit", Value: c.unit}})
	}
	return p
}
