package db_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkHistogramBytesPerSample is BenchmarkBytesPerSample for native histograms
// (on a histogram-heavy load): what a native histogram sample occupies on
// disk on each backend, raw (one cell per sample) and compacted into Prometheus'
// histogram chunks, and how fast db.DB.Write stores them.
//
//	go test -run '^$' -bench HistogramBytesPerSample -benchtime 1x -timeout 1h ./db/
//	TSDB_TEST_HBASE_ZK=127.0.0.1:32483 go test -run '^$' -bench HistogramBytesPerSample/hbase -benchtime 1x -timeout 1h ./db/
//
// The data: TSDB_BENCH_SERIES histogram series [1000], 20 to a host, scraped every
// 15 s for TSDB_BENCH_HOURS hours [4] from midnight UTC: 960 000 samples by
// default. Each sample is an integer native histogram of schema 3 with a zero
// bucket and TSDB_BENCH_BUCKETS populated buckets [30] in two spans; every scrape
// adds 0 to 4 observations to each bucket (deterministic per series), so the
// histograms grow like a request-latency histogram under steady load. Requests of
// sizeBatch histograms from sizeShards senders, as for floats; the store and its
// measurement are openSizeStore's. Besides, raw-cell-B/sample and
// chunk-cell-B/sample are the data table's cells' own bytes (row key, qualifier
// and value, before block encoding and compression) per sample, by family.
func BenchmarkHistogramBytesPerSample(b *testing.B) {
	shape := sizeShape{
		series: envInt(b, "TSDB_BENCH_SERIES", 1000),
		steps:  envInt(b, "TSDB_BENCH_HOURS", 4) * int(time.Hour/sizeInterval),
	}
	buckets := envInt(b, "TSDB_BENCH_BUCKETS", 30)
	for _, be := range schematest.Backends() {
		for _, chunks := range []bool{false, true} {
			name := be.Name + "/raw"
			if chunks {
				name = be.Name + "/chunks"
			}
			b.Run(name, func(b *testing.B) {
				if !be.Available() {
					b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
				}
				var res sizeResult
				for range b.N {
					res = measureHistogramBytes(b, be.Name, shape, buckets, chunks)
				}
				res.report(b, fmt.Sprintf("%s, %d-bucket histograms", name, buckets), shape)
			})
		}
	}
}

// measureHistogramBytes writes the histograms into a fresh store of the backend,
// compacts them into chunks if asked, compacts the store and measures it.
func measureHistogramBytes(b *testing.B, backend string, shape sizeShape, buckets int, chunks bool) sizeResult {
	b.Helper()
	b.StopTimer()
	ctx := context.Background()
	st := openSizeStore(b, backend)
	d, err := db.Open(ctx, db.Options{Store: st.Store, Settings: st.settings, Write: write.Options{Limits: write.Limits{}}})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()

	series := make([]*histSeries, shape.series)
	for i := range series {
		series[i] = newHistSeries(i, buckets)
	}
	b.StartTimer()
	start := time.Now()
	var written atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for shard := range sizeShards {
		g.Go(func() error {
			n, err := sendHistShard(gctx, d, series, shard, shape.steps)
			written.Add(n)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("ingest: %v", err)
	}
	res := sizeResult{samples: written.Load(), ingest: time.Since(start)}
	if res.samples != shape.samples() {
		b.Fatalf("wrote %d histogram samples, want %d", res.samples, shape.samples())
	}
	if chunks {
		start = time.Now()
		c, err := compact.NewCompactor(st.Store, st.settings, compact.Options{
			Now:     func() time.Time { return sizeDay.Add(48 * time.Hour) }, // the hours are sealed
			Rollups: schema.DefaultRollups(),
		})
		if err != nil {
			b.Fatal(err)
		}
		cs, err := c.Compact(ctx)
		if err != nil {
			b.Fatalf("compact into chunks: %v", err)
		}
		res.chunked = time.Since(start)
		if int64(cs.Samples) != res.samples || cs.Skipped != 0 {
			b.Fatalf("compacted %+v, want every one of the %d histogram samples in a chunk", cs, res.samples)
		}
	}
	// The cells' own bytes (key, qualifier and value, before the backend's
	// block encoding and compression), per family of the data table.
	cells := map[string]int64{}
	sc := st.Scan(ctx, schema.TableData, nil, nil)
	for sc.Next() {
		row := sc.Row()
		for _, c := range row.Cells {
			cells[c.Family] += int64(len(row.Key) + len(c.Qualifier) + len(c.Value))
		}
	}
	if err := errors.Join(sc.Err(), sc.Close()); err != nil {
		b.Fatalf("scan the data table: %v", err)
	}
	per := func(n int64) float64 { return float64(n) / float64(res.samples) }
	b.ReportMetric(per(cells[schema.FamilyRaw]), "raw-cell-B/sample")
	b.ReportMetric(per(cells[schema.FamilyChunk]), "chunk-cell-B/sample")
	start = time.Now()
	res.tableBytes, res.total, res.files, err = st.measure(ctx)
	if err != nil {
		b.Fatalf("measure: %v", err)
	}
	res.compact = time.Since(start)
	b.StopTimer()
	return res
}

// histSeries is one histogram series of the benchmark and its cumulative counts.
type histSeries struct {
	labels  labels.Labels
	offset  int64 // ms into the interval at which its host is scraped
	rng     uint64
	zero    uint64
	buckets []int64
	sum     float64
}

func newHistSeries(i, buckets int) *histSeries {
	host := i / seriesPerHost
	ls := labels.FromStrings(
		labels.MetricName, "http_request_duration_seconds",
		"host", fmt.Sprintf("host-%03d", host),
		"instance", fmt.Sprintf("host-%03d:9100", host),
		"job", "api",
		"handler", "/api/v"+strconv.Itoa(i%seriesPerHost),
	)
	f := fnv.New64a()
	f.Write([]byte(ls.String()))
	return &histSeries{
		labels:  ls,
		offset:  int64(host*7919) % sizeInterval.Milliseconds(),
		rng:     f.Sum64() | 1,
		buckets: make([]int64, buckets),
	}
}

func (s *histSeries) rand() float64 {
	s.rng ^= s.rng << 13
	s.rng ^= s.rng >> 7
	s.rng ^= s.rng << 17
	return float64(s.rng>>11) / (1 << 53)
}

// next advances the series by one scrape and returns its histogram: schema 3, zero
// threshold 0.001, the buckets in two spans with a gap of two, counts as deltas.
func (s *histSeries) next() *histogram.Histogram {
	s.zero += uint64(s.rand() * 3)
	count := s.zero
	for i := range s.buckets {
		n := int64(s.rand() * 5)
		s.buckets[i] += n
		count += uint64(s.buckets[i])
		s.sum += float64(n) * math.Exp2(float64(10+i)/8)
	}
	first := len(s.buckets) - len(s.buckets)/4
	h := &histogram.Histogram{
		Schema:        3,
		ZeroThreshold: 0.001,
		ZeroCount:     s.zero,
		Count:         count,
		Sum:           s.sum,
		PositiveSpans: []histogram.Span{
			{Offset: 10, Length: uint32(first)},
			{Offset: 2, Length: uint32(len(s.buckets) - first)},
		},
		PositiveBuckets: make([]int64, len(s.buckets)),
	}
	var prev int64
	for i, c := range s.buckets {
		h.PositiveBuckets[i] = c - prev
		prev = c
	}
	return h
}

// sendHistShard sends the histograms of the series that fall on shard, scrape
// after scrape, in requests of sizeBatch histograms.
func sendHistShard(ctx context.Context, d *db.DB, all []*histSeries, shard, steps int) (int64, error) {
	var own []*histSeries
	for i, s := range all {
		if i%sizeShards == shard {
			own = append(own, s)
		}
	}
	var (
		req     write.Request
		pos     = make(map[*histSeries]int)
		pending int
		written int64
	)
	send := func() error {
		res, err := d.Write(ctx, &req)
		if err == nil {
			err = write.RejectionError(res)
		}
		if err != nil {
			return err
		}
		written += int64(res.HistogramsWritten)
		req = write.Request{Series: req.Series[:0]}
		clear(pos)
		pending = 0
		return nil
	}
	for k := range steps {
		step := sizeDay.Add(time.Duration(k) * sizeInterval).UnixMilli()
		for _, s := range own {
			i, ok := pos[s]
			if !ok {
				i = len(req.Series)
				pos[s] = i
				req.Series = append(req.Series, write.Series{Labels: s.labels})
			}
			req.Series[i].Histograms = append(req.Series[i].Histograms, cellenc.HistogramSample{T: step + s.offset, H: s.next()})
			if pending++; pending == sizeBatch {
				if err := send(); err != nil {
					return written, err
				}
			}
		}
	}
	if pending > 0 {
		if err := send(); err != nil {
			return written, err
		}
	}
	return written, nil
}
