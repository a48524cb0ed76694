package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

func TestSelectServers(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		list                    string
		hbase, base, histograms bool
		want                    []string
		wantErr                 string
	}{
		{name: "the default is the three servers", want: []string{"tsdb", "prometheus", "victoriametrics"}},
		{name: "an HBase adds tsdb on HBase", hbase: true,
			want: []string{"tsdb", "tsdb-hbase", "prometheus", "victoriametrics"}},
		{name: "a base binary adds the base servers", hbase: true, base: true,
			want: []string{"tsdb", "tsdb-base", "tsdb-hbase", "tsdb-hbase-base", "prometheus", "victoriametrics"}},
		{name: "a list is run in round order", list: "tsdb-hbase-base, tsdb-hbase", hbase: true, base: true,
			want: []string{"tsdb-hbase", "tsdb-hbase-base"}},
		{name: "an unknown name is an error", list: "tsdb,influx", wantErr: `unknown server "influx"`},
		{name: "tsdb on HBase needs an HBase", list: "tsdb-hbase", wantErr: "needs an HBase"},
		{name: "a base server needs a base binary", list: "tsdb-base", wantErr: "needs -tsdb-base-bin"},
		{name: "a histogram load leaves VictoriaMetrics out", hbase: true, histograms: true,
			want: []string{"tsdb", "tsdb-hbase", "prometheus"}},
		{name: "VictoriaMetrics stores no native histograms", list: "tsdb,victoriametrics", histograms: true,
			wantErr: "victoriametrics is not run with -load histograms (it stores no native histograms) or -proto 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selectServers(tc.list, tc.hbase, tc.base, tc.histograms)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("selectServers = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseFlagsHBase(t *testing.T) {
	c, err := parseFlags([]string{"-quick", "-hbase", "-servers", "tsdb-hbase", "-tsdb-args", "--web.enable-pprof  --log.level=warn"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.hbase.Start || !slices.Equal(c.servers, []string{"tsdb-hbase"}) ||
		!slices.Equal(c.tsdbArgs, []string{"--web.enable-pprof", "--log.level=warn"}) {
		t.Errorf("config = %+v", c)
	}
	if _, err := parseFlags([]string{"-hbase", "-hbase-zk", "127.0.0.1:2181"}); err == nil {
		t.Error("-hbase with -hbase-zk accepted")
	}
	c, err = parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tsdb", "prometheus", "victoriametrics"}; !slices.Equal(c.servers, want) {
		t.Errorf("default servers = %v, want %v", c.servers, want)
	}
}

func TestRenderTableWithHBase(t *testing.T) {
	c, err := parseFlags([]string{"-quick", "-hbase-zk", "127.0.0.1:2181", "-servers", "tsdb,tsdb-hbase"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := serverKinds(binaries{tsdb: "tsdb", hbase: &hbaserun.Instance{ZK: "127.0.0.1:2181"}}, c.servers)
	if len(kinds) != 2 || kinds[1].Short != "tsdb-hbase" {
		t.Fatalf("kinds = %v", kinds)
	}
	if args := strings.Join(kinds[1].Args(server.StartSpec{Dir: "d", Addr: "127.0.0.1:1", TablePrefix: "p-"}), " "); args !=
		"serve --storage=hbase:127.0.0.1:2181 --hbase.table-prefix=p- --listen=127.0.0.1:1" {
		t.Errorf("tsdb (HBase) args = %s", args)
	}
	queries := make([]queryResult, len(queries(c.load)))
	for i := range queries {
		queries[i] = queryResult{series: 1, samples: 1, median: time.Millisecond}
	}
	in := ingestResult{samples: 1_000_000, wall: 10 * time.Second, cpu: 5 * time.Second, cpuIdle: 6 * time.Second,
		settled: true, diskByte: 1 << 20}
	results := [][]roundResult{
		{{ingest: in, peakRSS: 100 << 20, diskStopped: 2 << 20, queries: queries}},
		{{ingest: in, peakRSS: 50 << 20, queries: queries, hbase: &hbaseRound{
			jvmCPU: 20 * time.Second, jvmCPUIdle: 25 * time.Second, jvmSettled: true,
			walBytes: 83_000_000, tableBytes: 18_500_000, tables: 6}}},
	}
	table := renderTable(c, kinds, results, time.Now())
	for _, line := range []string{
		"| | tsdb (embedded) | tsdb (HBase) | tsdb ÷ best peer |",
		"| disk after ingest, MiB | 1.0 | – | – |",
		"| HBase JVM CPU-seconds per million samples, ingest | – | 20.00 | – |",
		"| same, until tsdb and then HBase went idle after the ingest | – | 25.00 | – |",
		"| tsdb + HBase JVM CPU-seconds per million samples, ingest | – | 25.00 | – |",
		"| HBase WAL written, bytes per sample | – | 83.0 | – |",
		"| HBase tables after flush + major compaction, bytes per sample | – | 18.50 | – |",
	} {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("table lacks the line\n%s\nin\n%s", line, table)
		}
	}
	// Without HBase, no HBase rows nor note.
	table = renderTable(c, kinds[:1], results[:1], time.Now())
	if strings.Contains(table, "HBase") {
		t.Errorf("a table without tsdb (HBase) mentions HBase:\n%s", table)
	}
}
