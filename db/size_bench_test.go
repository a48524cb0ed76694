package db_test

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/testing/hbaseadmin"
	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkBytesPerSample measures what node-exporter-like data occupies on disk, on
// each backend, once everything is compacted: the "before" number of the compaction
// work (raw cells -> chunks), and later its "after".
//
//	go test -run '^$' -bench BytesPerSample -benchtime 1x -timeout 2h ./db/
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh status) go test -run '^$' -bench BytesPerSample/hbase -benchtime 1x -timeout 2h ./db/
//	TSDB_BENCH_SERIES=200 TSDB_BENCH_HOURS=2 go test -run '^$' -bench BytesPerSample -benchtime 1x ./db/
//
// An HBase of one's own, next to one that CI runs:
//
//	export HBTSDB_HBASE_RUN=/tmp/hbtsdb-hbase-mine
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh start) go test -run '^$' -bench BytesPerSample/hbase -benchtime 1x -timeout 2h ./db/
//	testing/hbase/hbase.sh stop
//
// The data: TSDB_BENCH_SERIES series [1000] scraped every 15 s for TSDB_BENCH_HOURS
// hours [24] from midnight UTC (one index day): 5.76 M samples by default. Series come
// 20 to a host (so 50 hosts) with node exporter's names and labels (job, instance,
// host; cpu, mode, device, fstype, mountpoint): 12 counters (CPU seconds in 1/100 s,
// network and disk bytes, context switches; a tenth of the hosts restart once, which
// resets them), 4 gauges that wander (available memory, load1, load5, free disk space
// that mostly stays put) and 4 constants (filesystem size, total memory, boot time,
// up). Each host is scraped at its own offset in the interval, at exact 15 s steps
// (Prometheus aligns scrape timestamps within 2 ms). The values are deterministic:
// every series has its own seeded generator.
//
// Like Prometheus' remote write, sizeShards shards each own a share of the series and
// send requests of sizeBatch samples in time order; each request goes through
// db.DB.Write (no limits: the day is in the past) into a fresh store whose tables keep
// data forever (RawRetention 0, rollups too). Then the store is compacted: the embedded store
// flushes and compacts its whole key space (embedded.Store.Compact) and is measured by
// Pebble (live sstable bytes; each table's share is Pebble's estimate over its key
// range, which counts whole data blocks where two tables meet, so an empty table can
// show a kilobyte or two); HBase
// tables are flushed, major-compacted and reopened (testing/hbaseadmin, which needs
// the HBase that testing/hbase/hbase.sh started, and the same HBTSDB_HBASE_RUN if it
// was started with one) and measured by the HFiles under its root directory. HBase runs
// with the production defaults (16 salts, no compression, FAST_DIFF block
// encoding), not schematest's 4 salts; Pebble compresses blocks with Snappy.
//
// Reported: B/sample (every table's bytes over the samples written) and the share of
// each table (data-, index-, series-, meta-B/sample), samples/s of the ingestion and
// compact-s, the time the compaction took. The index holds one entry per label pair
// per series per day, so with fewer hours than 24 its share per sample grows.
//
// Each backend runs twice: raw, the data as written (one cell per sample), and
// chunks, with every bucket compacted into XOR chunks by compact.Compactor
// before the store compaction (compacted-samples/s is that pass's throughput).
func BenchmarkBytesPerSample(b *testing.B) {
	shape := sizeShapeFromEnv(b)
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
					res = measureBytesPerSample(b, be.Name, shape, chunks)
				}
				res.report(b, name, shape)
			})
		}
	}
}

const (
	// sizeBatch is the samples per request, Prometheus' max_samples_per_send.
	sizeBatch = 2000
	// sizeShards is the number of concurrent senders, as Prometheus' remote-write
	// shards (its minimum is 1, its maximum 50).
	sizeShards = 4
	// sizeInterval is the scrape interval.
	sizeInterval = 15 * time.Second
	// seriesPerHost is how many series one node exporter has here (nodeHost.series).
	seriesPerHost = 20
)

// sizeDay is the first scrape's step: midnight UTC, so a day of data is one index day.
var sizeDay = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)

// sizeShape is how much data the benchmark writes.
type sizeShape struct {
	series int // series in all, seriesPerHost to a host
	steps  int // scrapes of each series
}

func (s sizeShape) samples() int64 { return int64(s.series) * int64(s.steps) }

// sizeShapeFromEnv reads TSDB_BENCH_SERIES [1000] and TSDB_BENCH_HOURS [24].
func sizeShapeFromEnv(b *testing.B) sizeShape {
	b.Helper()
	series := envInt(b, "TSDB_BENCH_SERIES", 1000)
	hours := envInt(b, "TSDB_BENCH_HOURS", 24)
	return sizeShape{series: series, steps: hours * int(time.Hour/sizeInterval)}
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// sizeResult is what one run measured.
type sizeResult struct {
	samples    int64
	ingest     time.Duration
	compact    time.Duration
	chunked    time.Duration    // compact.Compactor's pass, 0 for raw
	total      int64            // bytes of every table (embedded: every live sstable)
	tableBytes map[string]int64 // by logical table name
	files      string           // what else the backend says of its files
}

func (r sizeResult) report(b *testing.B, backend string, shape sizeShape) {
	b.Helper()
	per := func(n int64) float64 { return float64(n) / float64(r.samples) }
	rate := float64(r.samples) / r.ingest.Seconds()
	b.ReportMetric(per(r.total), "B/sample")
	var rollups int64
	for _, t := range []string{schema.TableData, schema.TableIndex, schema.TableSeries, schema.TableMeta} {
		b.ReportMetric(per(r.tableBytes[t]), t+"-B/sample")
	}
	for t, n := range r.tableBytes {
		if strings.HasPrefix(t, "rollup-") {
			rollups += n
		}
	}
	b.ReportMetric(per(rollups), "rollups-B/sample")
	b.ReportMetric(per(r.total-rollups), "no-rollups-B/sample")
	b.ReportMetric(rate, "samples/s")
	b.ReportMetric(r.compact.Seconds(), "compact-s")
	if r.chunked > 0 {
		b.ReportMetric(float64(r.samples)/r.chunked.Seconds(), "compacted-samples/s")
	}
	var tables []string
	for _, t := range slices.Sorted(maps.Keys(r.tableBytes)) {
		tables = append(tables, fmt.Sprintf("%s %d B (%.3f B/sample)", t, r.tableBytes[t], per(r.tableBytes[t])))
	}
	b.Logf("%s: %d series x %d scrapes = %d samples written in %s (%.0f samples/s), compacted in %s: %d B on disk = %.2f B/sample; %s; %s",
		backend, shape.series, shape.steps, r.samples, r.ingest.Round(time.Millisecond), rate,
		r.compact.Round(time.Millisecond), r.total, per(r.total), strings.Join(tables, ", "), r.files)
}

// measureBytesPerSample writes the day into a fresh store of the backend, compacts it
// and measures it.
func measureBytesPerSample(b *testing.B, backend string, shape sizeShape, chunks bool) sizeResult {
	b.Helper()
	b.StopTimer() // the store's creation is not measured
	ctx := context.Background()
	st := openSizeStore(b, backend)
	clock := newShardClock(sizeShards)
	d, err := db.Open(ctx, db.Options{Store: st.Store, Settings: st.settings, Write: write.Options{Limits: write.Limits{}, Now: clock.Now}})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()

	hosts := newNodeHosts(shape)
	b.StartTimer()
	start := time.Now()
	written, err := ingest(ctx, d, clock, hosts, shape)
	if err != nil {
		b.Fatalf("ingest: %v", err)
	}
	res := sizeResult{samples: written, ingest: time.Since(start)}
	if written != shape.samples() {
		b.Fatalf("wrote %d samples, want %d", written, shape.samples())
	}
	if chunks {
		start = time.Now()
		c, err := compact.NewCompactor(st.Store, st.settings, compact.Options{
			Now:     func() time.Time { return sizeDay.Add(48 * time.Hour) }, // the day is sealed
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
		if int64(cs.Samples) != written || cs.Skipped != 0 {
			b.Fatalf("compacted %+v, want every one of the %d samples in a chunk", cs, written)
		}
	}
	start = time.Now()
	res.tableBytes, res.total, res.files, err = st.measure(ctx)
	if err != nil {
		b.Fatalf("measure: %v", err)
	}
	res.compact = time.Since(start)
	b.StopTimer()
	return res
}

// sizeStore is a store with hbtsdb's schema, and how to compact and measure it.
type sizeStore struct {
	kv.Store
	settings schema.Settings
	// measure compacts the store and returns the bytes of each table (by logical
	// name) and of all, and a word on the files they are in.
	measure func(ctx context.Context) (tables map[string]int64, total int64, files string, err error)
}

// openSizeStore opens a fresh store of the backend with the schema created with its
// default settings and a raw retention of 0 (forever); it is removed when b ends.
func openSizeStore(b *testing.B, backend string) sizeStore {
	b.Helper()
	ctx := context.Background()
	var st sizeStore
	switch backend {
	case "embedded":
		es, err := embedded.Open(ctx, b.TempDir(), embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { es.Close() })
		st = sizeStore{Store: es, settings: schema.DefaultEmbeddedSettings()}
		st.measure = func(ctx context.Context) (map[string]int64, int64, string, error) {
			if err := es.Compact(ctx); err != nil {
				return nil, 0, "", err
			}
			u, err := es.DiskUsage(ctx)
			if err != nil {
				return nil, 0, "", err
			}
			return u.Tables, u.SSTables, fmt.Sprintf("store directory %d B (sstables, WAL, manifest)", u.Files), nil
		}
	case "hbase":
		zk := hbasetest.ZooKeeper(b)
		// Before writing anything: fail at once if the HBase's files are not here.
		root, err := hbaseadmin.RootDir(ctx, zk)
		if err != nil {
			b.Fatal(err)
		}
		prefix := hbasetest.UniquePrefix("size")
		hs := hbasestore.Open(b, zk, prefix)
		b.Cleanup(func() {
			hs.Close()
			hbasestore.DropPrefix(b, zk, prefix)
		})
		st = sizeStore{Store: hs, settings: schema.DefaultHBaseSettings()}
		st.measure = func(ctx context.Context) (map[string]int64, int64, string, error) {
			names, err := hs.ListTables(ctx)
			if err != nil {
				return nil, 0, "", err
			}
			full := make([]string, len(names))
			for i, name := range names {
				full[i] = prefix + name
			}
			if err := hbaseadmin.Compact(ctx, zk, full...); err != nil {
				return nil, 0, "", err
			}
			tables := make(map[string]int64, len(names))
			var total int64
			var files []string
			for i, name := range names {
				f, err := hbaseadmin.HFiles(root, full[i])
				if err != nil {
					return nil, 0, "", err
				}
				tables[name] = f.Bytes
				total += f.Bytes
				var fams []string
				for _, fam := range slices.Sorted(maps.Keys(f.FamilyBytes)) {
					fams = append(fams, fmt.Sprintf("%s:%d B", fam, f.FamilyBytes[fam]))
				}
				files = append(files, fmt.Sprintf("%s %d in %d stores (%s)", name, f.Count, f.Stores, strings.Join(fams, " ")))
			}
			return tables, total, "HFiles: " + strings.Join(files, ", "), nil
		}
	default:
		b.Fatalf("unknown backend %q", backend)
	}
	opts := schema.DefaultTableOptions()
	opts.RawRetention = 0
	// The day is in the past: rollups kept forever too, or HBase's major
	// compaction would drop the 5m rollup (90d) before it is measured.
	for i := range opts.Rollups {
		opts.Rollups[i].Retention = 0
	}
	opts.Salts = st.settings.Salts
	schematest.CreateWith(b, st.Store, st.settings, opts)
	return st
}

// ingest writes every sample of the hosts' series through d, sizeShards senders at a
// time, and returns how many samples d stored.
func ingest(ctx context.Context, d *db.DB, clock *shardClock, hosts []*nodeHost, shape sizeShape) (int64, error) {
	var all []*nodeSeries
	for _, h := range hosts {
		all = append(all, h.series...)
	}
	all = all[:shape.series]
	// Hosts are scraped in the order of their offsets in the interval.
	slices.SortStableFunc(all, func(x, y *nodeSeries) int { return cmp.Compare(x.host.offset, y.host.offset) })

	var written atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for shard := range sizeShards {
		var own []*nodeSeries
		for i, s := range all {
			if i%sizeShards == shard {
				own = append(own, s)
			}
		}
		g.Go(func() error {
			n, err := sendShard(ctx, d, own, shape.steps, shard == 0, func(ms int64) { clock.shards[shard].Store(ms) })
			written.Add(n)
			return err
		})
	}
	err := g.Wait()
	return written.Load(), err
}

// sendShard sends the samples of series, scrape after scrape, in requests of
// sizeBatch samples, each series once per request with its samples in time order.
// The first request carries the metrics' metadata when withMetadata is set.
func sendShard(ctx context.Context, d *db.DB, series []*nodeSeries, steps int, withMetadata bool, at func(ms int64)) (int64, error) {
	var (
		req     write.Request
		pos     = make(map[*nodeSeries]int) // index in req.Series
		pending int
		written int64
	)
	if withMetadata {
		req.Metadata = nodeMetadata()
	}
	send := func() error {
		res, err := d.Write(ctx, &req)
		if err == nil {
			err = write.RejectionError(res)
		}
		if err != nil {
			return err
		}
		written += int64(res.SamplesWritten)
		req = write.Request{Series: req.Series[:0]}
		clear(pos)
		pending = 0
		return nil
	}
	for k := range steps {
		step := sizeDay.Add(time.Duration(k) * sizeInterval).UnixMilli()
		at(step)
		for _, s := range series {
			i, ok := pos[s]
			if !ok {
				i = len(req.Series)
				pos[s] = i
				req.Series = append(req.Series, write.Series{Labels: s.labels})
			}
			req.Series[i].Samples = append(req.Series[i].Samples, cellenc.Sample{T: step + s.host.offset, V: s.next(k)})
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

// shardClock is the writer's clock of a load sent by several shards: the
// scrape the slowest shard is at, so that every sample is written on time
// (schema/late.go), as a live Prometheus' are.
type shardClock struct{ shards []atomic.Int64 }

func newShardClock(n int) *shardClock { return &shardClock{shards: make([]atomic.Int64, n)} }

func (c *shardClock) Now() time.Time {
	least := int64(math.MaxInt64)
	for i := range c.shards {
		least = min(least, c.shards[i].Load())
	}
	return time.UnixMilli(least)
}

// nodeHost is one node exporter target.
type nodeHost struct {
	name   string
	offset int64 // when in the interval it is scraped, in ms
	reboot int   // the scrape at which it has restarted (counters reset), -1 for none
	series []*nodeSeries
}

// nodeSeries is one series and the generator of its values.
type nodeSeries struct {
	labels labels.Labels
	host   *nodeHost
	// next returns the value of scrape k; it is called for k = 0, 1, 2, ...
	next func(k int) float64
}

// newNodeHosts makes enough hosts for shape.series series, deterministically.
func newNodeHosts(shape sizeShape) []*nodeHost {
	n := (shape.series + seriesPerHost - 1) / seriesPerHost
	hosts := make([]*nodeHost, n)
	for i := range hosts {
		hosts[i] = newNodeHost(i, shape.steps)
	}
	return hosts
}

func newNodeHost(i, steps int) *nodeHost {
	name := fmt.Sprintf("node-%03d", i)
	hash := fnv.New64a()
	hash.Write([]byte(name))
	rng := rand.New(rand.NewPCG(hash.Sum64(), 1))
	h := &nodeHost{name: name, offset: rng.Int64N(sizeInterval.Milliseconds()), reboot: -1}
	if i%10 == 3 {
		h.reboot = rng.IntN(steps)
	}
	var (
		load     = 0.05 + 0.6*rng.Float64()       // how busy its CPUs are
		uptime   = 86400 * (1 + 60*rng.Float64()) // seconds since boot at the first scrape
		memTotal = float64(int64(4+rng.IntN(60)) << 30)
		fsSize   = float64(int64(50+rng.IntN(950)) << 30)
		netRate  = 1e4 + 1e6*rng.Float64() // bytes/s
		diskRate = 1e4 + 5e6*rng.Float64()
		csRate   = 1000 + 20000*rng.Float64() // context switches/s
		bootTime = math.Floor(float64(sizeDay.Unix()) - uptime)
	)
	common := []string{"host", name, "instance", name + ":9100", "job", "node"}
	add := func(next func(k int) float64, nameAndLabels ...string) {
		lbls := labels.FromStrings(append(append([]string{"__name__"}, nameAndLabels...), common...)...)
		h.series = append(h.series, &nodeSeries{labels: lbls, host: h, next: next})
	}
	seriesRng := func() *rand.Rand {
		return rand.New(rand.NewPCG(hash.Sum64(), uint64(len(h.series))+2))
	}
	// counter returns a counter that starts at start and grows by inc() per scrape,
	// from 0 again at the reboot.
	counter := func(start float64, inc func(r *rand.Rand) float64) func(int) float64 {
		r, v := seriesRng(), start
		return func(k int) float64 {
			if k == h.reboot {
				v = 0
			}
			v += inc(r)
			return v
		}
	}
	scrape := sizeInterval.Seconds()

	// CPU seconds per cpu and mode: /proc/stat counts in 1/100 s (USER_HZ), which
	// node exporter divides by 100.
	for cpu := range 2 {
		for _, m := range []struct {
			mode  string
			share float64
		}{{"idle", 1 - 0.95*load}, {"iowait", 0.05 * load}, {"system", 0.25 * load}, {"user", 0.65 * load}} {
			ticks := func(r *rand.Rand) float64 { return math.Round(scrape * 100 * m.share * (0.8 + 0.4*r.Float64())) }
			c := counter(math.Round(uptime*100*m.share), ticks)
			add(func(k int) float64 { return c(k) / 100 }, "node_cpu_seconds_total", "cpu", strconv.Itoa(cpu), "mode", m.mode)
		}
	}
	bytes := func(rate float64) func(r *rand.Rand) float64 {
		return func(r *rand.Rand) float64 { return math.Round(scrape * rate * (0.5 + r.Float64())) }
	}
	add(counter(math.Round(uptime*netRate), bytes(netRate)), "node_network_receive_bytes_total", "device", "eth0")
	add(counter(math.Round(uptime*netRate/3), bytes(netRate/3)), "node_network_transmit_bytes_total", "device", "eth0")
	sectors := func(r *rand.Rand) float64 {
		if r.IntN(5) == 0 {
			return 0
		}
		return 512 * math.Floor(scrape*diskRate*r.Float64()/512)
	}
	add(counter(512*math.Floor(uptime*diskRate/2/512), sectors), "node_disk_written_bytes_total", "device", "sda")
	add(counter(math.Round(uptime*csRate), bytes(csRate)), "node_context_switches_total")

	// Gauges that wander: available memory in pages, load averages to 2 decimals as
	// /proc/loadavg has them, free disk space that mostly stays put.
	{
		r, v := seriesRng(), memTotal/2
		add(func(int) float64 {
			v = math.Min(math.Max(v+4096*math.Round(r.NormFloat64()*memTotal*0.002/4096), memTotal*0.1), memTotal*0.9)
			return v
		}, "node_memory_MemAvailable_bytes")
	}
	for _, l := range []struct {
		name string
		keep float64
	}{{"node_load1", 0.92}, {"node_load5", 0.985}} {
		r, v := seriesRng(), 2*load
		add(func(int) float64 {
			// Two CPUs about load busy: the average runs around 2*load.
			v = l.keep*v + (1-l.keep)*2*load*(0.5+r.Float64())
			return math.Round(v*100) / 100
		}, l.name)
	}
	fsLabels := []string{"device", "/dev/sda1", "fstype", "ext4", "mountpoint", "/"}
	{
		r, v := seriesRng(), math.Floor(fsSize*(0.2+0.6*rng.Float64())/4096)*4096
		add(func(int) float64 {
			if r.IntN(10) < 3 {
				v -= 4096 * float64(r.IntN(64)-16)
			}
			return v
		}, append([]string{"node_filesystem_avail_bytes"}, fsLabels...)...)
	}

	// Constants (boot time changes once, at the reboot).
	constant := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	add(constant(fsSize), append([]string{"node_filesystem_size_bytes"}, fsLabels...)...)
	add(constant(memTotal), "node_memory_MemTotal_bytes")
	add(func(k int) float64 {
		if h.reboot >= 0 && k >= h.reboot {
			return float64(sizeDay.Add(time.Duration(h.reboot) * sizeInterval).Unix())
		}
		return bootTime
	}, "node_boot_time_seconds")
	add(constant(1), "up")

	if len(h.series) != seriesPerHost {
		panic(fmt.Sprintf("node host has %d series, seriesPerHost says %d", len(h.series), seriesPerHost))
	}
	return h
}

// nodeMetadata is the type and help of the node exporter metrics above, as
// Prometheus sends them (up, which Prometheus makes itself, has none).
func nodeMetadata() []schema.Metadata {
	return []schema.Metadata{
		{Metric: "node_cpu_seconds_total", Type: model.MetricTypeCounter, Help: "Seconds the CPUs spent in each mode."},
		{Metric: "node_network_receive_bytes_total", Type: model.MetricTypeCounter, Help: "Network device statistic receive_bytes."},
		{Metric: "node_network_transmit_bytes_total", Type: model.MetricTypeCounter, Help: "Network device statistic transmit_bytes."},
		{Metric: "node_disk_written_bytes_total", Type: model.MetricTypeCounter, Help: "The total number of bytes written successfully."},
		{Metric: "node_context_switches_total", Type: model.MetricTypeCounter, Help: "Total number of context switches."},
		{Metric: "node_memory_MemAvailable_bytes", Type: model.MetricTypeGauge, Help: "Memory information field MemAvailable_bytes."},
		{Metric: "node_load1", Type: model.MetricTypeGauge, Help: "1m load average."},
		{Metric: "node_load5", Type: model.MetricTypeGauge, Help: "5m load average."},
		{Metric: "node_filesystem_avail_bytes", Type: model.MetricTypeGauge, Help: "Filesystem space available to non-root users in bytes."},
		{Metric: "node_filesystem_size_bytes", Type: model.MetricTypeGauge, Help: "Filesystem size in bytes."},
		{Metric: "node_memory_MemTotal_bytes", Type: model.MetricTypeGauge, Help: "Memory information field MemTotal_bytes."},
		{Metric: "node_boot_time_seconds", Type: model.MetricTypeGauge, Help: "Node boot time, in unixtime."},
	}
}
