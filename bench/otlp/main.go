// Command otlp measures OTLP ingest: the same OTLP/HTTP protobuf load, built
// in memory before the clock starts, is sent to tsdb serve (the embedded store,
// or HBase with -hbase-zk) and to a real Prometheus with
// --web.enable-otlp-receiver, one server after the other on fresh data, and it
// prints each server's samples per second and CPU-seconds per million samples
// (utime+stime of the server process from /proc, from just before the first
// request to just after the last answer).
//
// The load: -series series (hosts of 10 metrics: 5 gauges and 5 cumulative
// sums, each host a resource with service.name and service.instance.id),
// -rounds points each, 10 s apart and ending now, in requests of -batch data
// points, sent by -concurrency workers that each own a share of the hosts (so
// that every series gets its points in order, as Prometheus requires). Each
// request also makes one target_info sample per resource, in both servers; the
// samples counted are the data points plus those. Every request must be
// answered 200, and each server must then hold -series series of the load.
//
//	go run ./bench/otlp [-series 10000] [-rounds 30] [-batch 2000] [-concurrency 4] [-hbase-zk host:port]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// metricsPerHost is how many series one host (one OTLP resource) has.
const metricsPerHost = 10

type config struct {
	series, rounds, batch, concurrency int
	hbaseZK, workDir                   string
}

func main() {
	var c config
	flag.IntVar(&c.series, "series", 10000, "series of the load (a multiple of 10: hosts of 10 metrics)")
	flag.IntVar(&c.rounds, "rounds", 30, "points per series, 10s apart, ending now")
	flag.IntVar(&c.batch, "batch", 2000, "data points per OTLP request (a multiple of 10)")
	flag.IntVar(&c.concurrency, "concurrency", 4, "requests in flight at once")
	flag.StringVar(&c.hbaseZK, "hbase-zk", "", "measure tsdb on the HBase at this ZooKeeper instead of the embedded store")
	flag.StringVar(&c.workDir, "work-dir", "", "where the binaries and data go (default: a temporary directory, removed)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(context.Background(), log, c); err != nil {
		fmt.Fprintln(os.Stderr, "otlp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, c config) error {
	if c.series <= 0 || c.series%metricsPerHost != 0 || c.batch <= 0 || c.batch%metricsPerHost != 0 ||
		c.rounds <= 0 || c.concurrency <= 0 {
		return fmt.Errorf("-series and -batch must be positive multiples of %d, -rounds and -concurrency positive",
			metricsPerHost)
	}
	root, err := server.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	dir, removeDir, err := server.WorkDir(c.workDir, "hbtsdb-otlp-bench-", false)
	if err != nil {
		return err
	}
	defer removeDir()
	tsdbBin := filepath.Join(dir, "bin", "tsdb")
	if err := server.BuildTSDB(ctx, log, root, tsdbBin); err != nil {
		return err
	}
	log.Info("locating Prometheus (testing/prometheus/prometheus.sh; builds it once)")
	promBin, err := server.Script(ctx, root, "testing/prometheus/prometheus.sh", "build")
	if err != nil {
		return err
	}
	tsdb := server.TSDBEmbedded("tsdb (embedded)", "tsdb", tsdbBin, nil)
	if c.hbaseZK != "" {
		tsdb = server.TSDBHBase("tsdb (HBase)", "tsdb-hbase", tsdbBin, c.hbaseZK, nil)
	}
	prom := server.Kind{
		Name: "Prometheus OTLP receiver", Short: "prometheus", Bin: promBin,
		Prepare: func(d string) error {
			return os.WriteFile(filepath.Join(d, "..", "prometheus.yml"), []byte("scrape_configs: []\n"), 0o644)
		},
		Args: func(s server.StartSpec) []string {
			return []string{"--web.enable-otlp-receiver", "--storage.tsdb.path=" + s.Dir,
				"--config.file=" + filepath.Join(s.Dir, "..", "prometheus.yml"), "--web.listen-address=" + s.Addr,
				"--log.level=warn"}
		},
		Ready: "/-/ready",
	}

	log.Info("building the load", "series", c.series, "rounds", c.rounds, "batch", c.batch)
	load, samples := buildLoad(c, time.Now())
	fmt.Printf("OTLP ingest: %d series x %d points, %d-point requests, %d in flight: %d samples (with target_info) in %d requests\n\n",
		c.series, c.rounds, c.batch, c.concurrency, samples, countRequests(load))
	fmt.Printf("%-26s %12s %10s %12s %10s %10s\n", "server", "samples", "wall s", "samples/s", "CPU-s", "CPU-s/M")
	for _, k := range []*server.Kind{&tsdb, &prom} {
		sub := filepath.Join(dir, k.Short, "data")
		prefix := fmt.Sprintf("otlpbench%d-", time.Now().UnixNano())
		r, err := k.Start(ctx, sub, prefix, filepath.Join(dir, k.Short+".log"), 5*time.Minute)
		if err != nil {
			return err
		}
		res, err := measure(ctx, log, r, load)
		if err == nil {
			err = checkSeries(ctx, r.Base, c.series)
		}
		if stopErr := r.Stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
		fmt.Printf("%-26s %12d %10.2f %12.0f %10.2f %10.2f\n", k.Name, samples, res.wall.Seconds(),
			float64(samples)/res.wall.Seconds(), res.cpu.Seconds(), res.cpu.Seconds()/(float64(samples)/1e6))
	}
	return nil
}

// load is the requests of each worker, in the order it sends them.
type load [][][]byte

func countRequests(l load) int {
	n := 0
	for _, w := range l {
		n += len(w)
	}
	return n
}

// buildLoad marshals every request: worker w owns hosts h with h%concurrency
// == w and sends, round by round, its hosts' points in requests of batch
// points. It returns the requests and the samples they make (data points
// and one target_info sample per resource and request).
func buildLoad(c config, end time.Time) (load, int) {
	hosts := c.series / metricsPerHost
	perRequest := c.batch / metricsPerHost
	l := make(load, c.concurrency)
	samples := 0
	start := end.Add(-time.Duration(c.rounds-1) * 10 * time.Second).Truncate(time.Second)
	for w := range c.concurrency {
		var own []int
		for h := w; h < hosts; h += c.concurrency {
			own = append(own, h)
		}
		for r := range c.rounds {
			ts := pcommon.NewTimestampFromTime(start.Add(time.Duration(r) * 10 * time.Second))
			for i := 0; i < len(own); i += perRequest {
				md := pmetric.NewMetrics()
				for _, h := range own[i:min(i+perRequest, len(own))] {
					rm := md.ResourceMetrics().AppendEmpty()
					rm.Resource().Attributes().PutStr("service.name", "otlp-bench")
					rm.Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("host-%d", h))
					ms := rm.ScopeMetrics().AppendEmpty().Metrics()
					for m := range metricsPerHost {
						metric := ms.AppendEmpty()
						metric.SetName(fmt.Sprintf("bench.metric.%d", m))
						var dp pmetric.NumberDataPoint
						if m%2 == 0 {
							dp = metric.SetEmptyGauge().DataPoints().AppendEmpty()
							dp.SetDoubleValue(float64((h*7+m*13+r*31)%1000) / 8)
						} else {
							sum := metric.SetEmptySum()
							sum.SetIsMonotonic(true)
							sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
							dp = sum.DataPoints().AppendEmpty()
							dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(-time.Minute)))
							dp.SetIntValue(int64(r*(h%17+1) + m))
						}
						dp.SetTimestamp(ts)
					}
					samples += metricsPerHost + 1
				}
				b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
				if err != nil {
					panic(err) // marshaling what we built cannot fail
				}
				l[w] = append(l[w], b)
			}
		}
	}
	return l, samples
}

type result struct{ wall, cpu time.Duration }

// measure sends the load to r, each worker's requests in order, and returns the
// wall time and the server's CPU time from before the first request to after
// the last answer. Progress is logged every 10% of the requests.
func measure(ctx context.Context, log *slog.Logger, r *server.Running, l load) (result, error) {
	total := countRequests(l)
	cpu0, err := proc.CPUTime(r.Pid())
	if err != nil {
		return result{}, err
	}
	t0 := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		done     int
		firstErr error
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(l)}}
	for _, reqs := range l {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, body := range reqs {
				err := post(ctx, client, r.Base+"/api/v1/otlp/v1/metrics", body)
				mu.Lock()
				done++
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if done%max(total/10, 1) == 0 {
					log.Info("sending", "server", r.Kind.Short, "requests", done, "of", total)
				}
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	cpu1, err := proc.CPUTime(r.Pid())
	if err != nil {
		return result{}, err
	}
	return result{wall: wall, cpu: cpu1 - cpu0}, firstErr
}

func post(ctx context.Context, c *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, msg)
	}
	return nil
}

// checkSeries asks base how many series of the load it holds at the last
// round: all of them, or the run does not count.
func checkSeries(ctx context.Context, base string, series int) error {
	q := url.Values{"query": {`count({__name__=~"bench_metric_.+"})`}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("count the load's series: %w", err)
	}
	if len(r.Data.Result) != 1 {
		return errors.New("count the load's series: no answer")
	}
	if got := fmt.Sprint(r.Data.Result[0].Value[1]); got != fmt.Sprint(series) {
		return fmt.Errorf("holds %s series of the load, want %d", got, series)
	}
	return nil
}
