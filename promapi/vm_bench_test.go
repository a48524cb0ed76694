package promapi

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

const (
	vmBenchSeries  = 100   // series of one import request
	vmBenchPerLine = 1_000 // samples of one line: 100 000 samples a request
)

// vmImportBody is import request r as vmctl sends it (gzip, one line per
// series, fmt's %v values): vmBenchSeries node-exporter-like series with
// vmBenchPerLine samples each, one a second from t0 + r*vmBenchPerLine s, values
// of a gauge with two decimals.
func vmImportBody(t0 int64, r int) []byte {
	var raw bytes.Buffer
	rng := rand.New(rand.NewPCG(uint64(r), 7))
	for k := range vmBenchSeries {
		fmt.Fprintf(&raw, `{"metric":{"__name__":"node_bench_metric_%d","instance":"host-%d:9100","job":"node","mode":"user"},"timestamps":[`, k%50, k/50)
		for i := range vmBenchPerLine {
			if i > 0 {
				raw.WriteByte(',')
			}
			raw.WriteString(strconv.FormatInt(t0+int64(r*vmBenchPerLine+i)*1000, 10))
		}
		raw.WriteString(`],"values":[`)
		for i := range vmBenchPerLine {
			if i > 0 {
				raw.WriteByte(',')
			}
			fmt.Fprintf(&raw, "%v", float64(rng.IntN(1_000_000))/100)
		}
		raw.WriteString("]}\n")
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	return z.Bytes()
}

// BenchmarkVMImport sends /api/v1/import requests of 100 000 samples (100
// series, a line each, gzip, as vmctl sends them) over real HTTP through the
// whole handler (gunzip, decoding, the writer's check, the write) into a real
// db.DB, one request at a time and two at once (vmctl's default
// --vm-concurrency), and reports samples/s and the process's CPU-s per million
// samples.
//
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh status) go test -run '^$' -bench VMImport -benchtime 20x ./promapi/
func BenchmarkVMImport(b *testing.B) {
	for _, backend := range schematest.Backends() {
		for _, conc := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/concurrency-%d", backend.Name, conc), func(b *testing.B) {
				e := newVMEnv(b, backend, write.DefaultLimits(), Options{})
				t0 := e.now.Add(-24 * time.Hour).UnixMilli()
				bodies := make([][]byte, b.N)
				for i := range bodies {
					bodies[i] = vmImportBody(t0, i)
				}
				client := &http.Client{}
				send := func(body []byte) error {
					req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/v1/import", bytes.NewReader(body))
					req.Header.Set("Content-Encoding", "gzip")
					resp, err := client.Do(req)
					if err != nil {
						return err
					}
					msg, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						return fmt.Errorf("import: %d %s", resp.StatusCode, msg)
					}
					return nil
				}
				b.ResetTimer()
				cpu0 := processCPU(b)
				start := time.Now()
				var g errgroup.Group
				g.SetLimit(conc)
				for i := range b.N {
					g.Go(func() error { return send(bodies[i]) })
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
				elapsed := time.Since(start)
				cpu := processCPU(b) - cpu0
				b.StopTimer()
				samples := float64(b.N * vmBenchSeries * vmBenchPerLine)
				b.ReportMetric(samples/elapsed.Seconds(), "samples/s")
				b.ReportMetric(cpu.Seconds()/samples*1e6, "CPU-s/M")
				b.ReportMetric(float64(len(bodies[0])), "body-bytes")
			})
		}
	}
}
