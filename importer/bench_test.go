package importer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/importer"
)

// BenchmarkImportFileDryRun measures parsing an OpenMetrics file (200 series
// of node-exporter-like labels), without a store: the file import's ceiling.
func BenchmarkImportFileDryRun(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("# TYPE node_x gauge\n")
	const series, n = 200, 500
	base := hoursAgo(6) / 1000
	for i := range n {
		for s := range series {
			fmt.Fprintf(&sb, "node_x{instance=\"host%d:9100\",job=\"node\",cpu=\"%d\"} %d.5 %d\n", s%20, s, i*s, base+int64(i)*4)
		}
	}
	sb.WriteString("# EOF\n")
	path := filepath.Join(b.TempDir(), "in.om")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := importer.ImportFile(context.Background(), path, importer.FormatOpenMetrics, importer.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(series*n*b.N)/b.Elapsed().Seconds(), "samples/s")
}
