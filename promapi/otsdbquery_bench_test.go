package promapi

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkOpenTSDBQuery: GET /api/query over real HTTP and a real embedded
// db.DB holding 100 series of one hour at 10s (36,000 samples, put through
// /api/put): the whole path, read, aggregation and JSON.
func BenchmarkOpenTSDBQuery(b *testing.B) {
	e := newVMEnv(b, schematest.Backends()[0], write.DefaultLimits(), Options{})
	bs := e.now.Truncate(time.Hour).Add(-3 * time.Hour).Unix()
	for h := 0; h < 100; h++ {
		var items []string
		for t := int64(0); t < 3600; t += 10 {
			items = append(items, fmt.Sprintf(`{"metric":"bench.cpu","timestamp":%d,"value":%d,"tags":{"host":"h%03d"}}`, bs+t, t%97, h))
		}
		if r := post(b, e.srv.URL+"/api/put", nil, []byte("["+strings.Join(items, ",")+"]")); r.status != 204 {
			b.Fatalf("/api/put: %d %s", r.status, r.body)
		}
	}
	for _, m := range []string{"sum:bench.cpu", "sum:1m-avg:bench.cpu", "sum:rate:bench.cpu{host=*}"} {
		b.Run(m, func(b *testing.B) {
			args := url.Values{"start": {fmt.Sprint(bs)}, "end": {fmt.Sprint(bs + 3599)}, "m": {m}}
			for b.Loop() {
				if code, body := otsdbGet(b, e.srv.URL, args); code != 200 {
					b.Fatalf("%d %s", code, body)
				}
			}
			b.ReportMetric(float64(36000*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
