package otsdbimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/otsdbformat"
	"github.com/hbtsdb/hbtsdb/otsdbimport"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/testing/hbaseadmin"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
	"github.com/hbtsdb/hbtsdb/testing/opentsdbtest"
)

// BenchmarkImportFromOpenTSDB measures importing OpenTSDB's tables on the
// test HBase: a real OpenTSDB 2.4.1, with its compaction on (its default),
// is given 20 metrics × 25 hosts × 720 points (every 10s over two hours:
// 360,000 points in 1,000 rows, integers and floats) through /api/put, which
// it compacts, and HBase then flushes and major-compacts; each iteration
// imports them all into one hbtsdb store on the same HBase with tsdb's
// defaults (write; the first iteration into an empty store, the others onto
// the same cells), or reads and decodes them only (dry-run). Run it with
//
//	TSDB_TEST_HBASE_ZK=... TSDB_TEST_OPENTSDB=1 go test -run '^$' -bench ImportFromOpenTSDB -benchtime 3x ./otsdbimport/
func BenchmarkImportFromOpenTSDB(b *testing.B) {
	b.Setenv("OPENTSDB_EXTRA_CONF", strings.Join(compactionConf, "\n"))
	tsd := opentsdbtest.Start(b)
	const metrics, hosts, n = 20, 25, 720
	base := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour).Unix()
	var batch []datapoint
	for i := range n {
		for m := range metrics {
			for h := range hosts {
				v := fmt.Sprint(i * (m + h))
				if m%2 == 1 {
					v = fmt.Sprint(float64(i)*0.5 + float64(h))
				}
				batch = append(batch, datapoint{Metric: fmt.Sprintf("bench.metric.%02d", m), Timestamp: base + int64(i)*10,
					Value: json.RawMessage(v), Tags: map[string]string{"host": fmt.Sprintf("host-%02d", h), "dc": "eu"}})
			}
		}
		if len(batch) >= 5000 || i == n-1 {
			body, err := json.Marshal(batch)
			if err != nil {
				b.Fatal(err)
			}
			tsd.Put(b, body)
			batch = batch[:0]
		}
	}
	src := openSource(b, tsd, otsdbformat.Layout{})
	waitCompacted(b, tsd, src)
	// As an installation's table is after HBase's own compactions: the cells
	// OpenTSDB's compaction deleted gone, in HFiles rather than a memstore.
	if err := hbaseadmin.Compact(context.Background(), hbasetest.ZooKeeper(b), src.DataTable, src.UIDTable); err != nil {
		b.Fatal(err)
	}
	const points = metrics * hosts * n

	for _, dry := range []bool{false, true} {
		name := "write"
		if dry {
			name = "dry-run"
		}
		b.Run(name, func(b *testing.B) {
			o := otsdbimport.Options{Import: importer.Options{Logger: slog.New(slog.DiscardHandler)}}
			if !dry {
				// tsdb's defaults on HBase, 16 salts (the tests' HBase backend has 4).
				hb := schematest.Backends()[1]
				hb.Settings = schema.DefaultHBaseSettings()
				hb.TableOptions.Salts = hb.Settings.Salts
				d, _ := openDB(b, hb)
				o.Import.Sink = d
			}
			b.ResetTimer()
			for b.Loop() {
				var stats otsdbimport.Stats
				o.Import.Progress, o.Stats = &importer.Progress{}, &stats
				if err := otsdbimport.Import(context.Background(), src, o); err != nil {
					b.Fatal(err)
				}
				if got := o.Import.Progress.Samples.Load(); got != points {
					b.Fatalf("%d points imported, want %d (%s)", got, points, statsString(&stats))
				}
			}
			b.ReportMetric(float64(points*b.N)/b.Elapsed().Seconds(), "points/s")
			b.Logf("%s: %s", name, statsString(o.Stats))
		})
	}
}
