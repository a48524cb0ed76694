package main

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// serverKind is one of the servers compared: how to start it (server.Kind), and
// what the comparison needs to know of it.
type serverKind struct {
	server.Kind
	isPeer bool // counts for the ratio column's best peer
	// hbase is the HBase a tsdb (HBase) server stores into; nil for the others.
	hbase *hbaserun.Instance
}

// binaries are the servers' binaries and what else starting them needs.
type binaries struct {
	tsdb, tsdbBase            string // tsdbBase: -tsdb-base-bin, "" without it
	tsdbArgs                  []string
	prom, promVersion         string
	victoria, victoriaVersion string
	hbase                     *hbaserun.Instance // nil without -hbase, -hbase-run or -hbase-zk
}

// serverKinds returns the servers named, in the order each round runs them:
// tsdb (embedded), its baseline, tsdb (HBase), its baseline, Prometheus,
// VictoriaMetrics.
func serverKinds(b binaries, names []string) []*serverKind {
	tsdbHBase := func(name, short, bin string) *serverKind {
		zk := ""
		if b.hbase != nil {
			zk = b.hbase.ZK
		}
		return &serverKind{Kind: server.TSDBHBase(name, short, bin, zk, b.tsdbArgs), hbase: b.hbase}
	}
	all := []*serverKind{
		{Kind: server.TSDBEmbedded("tsdb (embedded)", "tsdb", b.tsdb, b.tsdbArgs)},
		{Kind: server.TSDBEmbedded("tsdb (embedded) base", "tsdb-base", b.tsdbBase, b.tsdbArgs)},
		tsdbHBase("tsdb (HBase)", "tsdb-hbase", b.tsdb),
		tsdbHBase("tsdb (HBase) base", "tsdb-hbase-base", b.tsdbBase),
		{isPeer: true, Kind: server.Kind{
			Name: "Prometheus " + b.promVersion + " receiver", Short: "prometheus", Bin: b.prom,
			Prepare: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "..", "prometheus.yml"), []byte("scrape_configs: []\n"), 0o644)
			},
			Args: func(s server.StartSpec) []string {
				return []string{
					"--web.enable-remote-write-receiver",
					"--storage.tsdb.path=" + s.Dir,
					"--config.file=" + filepath.Join(s.Dir, "..", "prometheus.yml"),
					"--web.listen-address=" + s.Addr,
					"--log.level=warn",
				}
			},
			Ready: "/-/ready",
		}},
		{isPeer: true, Kind: server.VictoriaMetrics(b.victoria, b.victoriaVersion)},
	}
	var kinds []*serverKind
	for _, k := range all {
		if slices.Contains(names, k.Short) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}
