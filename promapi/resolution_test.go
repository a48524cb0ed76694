package promapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// rollupStart is the first sample of the rollup fixture: 12 hours of
// g{host="h"} at 15 s, value i%97 at rollupStart+15i s, compacted into chunks
// and rollups.
var rollupStart = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func newRollupEnv(t *testing.T, b schematest.Backend) *queryEnv {
	t.Helper()
	st := b.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := db.Open(ctx, db.Options{Store: st, Settings: b.Settings, Logger: slog.New(slog.DiscardHandler),
		Rollups: schema.DefaultRollups(), RawRetention: schema.DefaultRawRetention,
		Now: func() time.Time { return rollupStart.Add(24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s := write.Series{Labels: ls("__name__", "g", "host", "h")}
	for i := range 12 * 240 {
		s.Samples = append(s.Samples, cellenc.Sample{T: rollupStart.UnixMilli() + 15_000*int64(i), V: float64(i % 97)})
	}
	if res, err := d.Write(ctx, &write.Request{Series: []write.Series{s}}); err != nil || len(res.Rejected) > 0 {
		t.Fatalf("write: %v %+v", err, res.Rejected)
	}
	c, err := compact.NewCompactor(st, b.Settings, compact.Options{Rollups: schema.DefaultRollups(),
		Now: func() time.Time { return rollupStart.Add(24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if stats, err := c.Compact(ctx); err != nil || stats.Rows == 0 {
		t.Fatalf("compact: %+v, %v", stats, err)
	}
	srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(d), Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	return &queryEnv{srv: srv, db: d}
}

type apiAnswer struct {
	Status string          `json:"status"`
	Data   json.RawMessage `json:"data"`
	Infos  []string        `json:"infos"`
	Error  string          `json:"error"`
}

// TestResolutionParameter: /api/v1/query(_range) serve aligned queries from a
// rollup with the same data as raw and an info saying so, take
// resolution=raw|auto|<res>, and refuse anything else with 400 bad_data.
func TestResolutionParameter(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newRollupEnv(t, b)
			start := fmt.Sprint(rollupStart.Add(2 * time.Hour).Unix())
			end := fmt.Sprint(rollupStart.Add(12 * time.Hour).Unix())
			ask := func(post bool, path string, pairs ...string) (int, apiAnswer) {
				t.Helper()
				status, _, body := e.get(t, post, path, q(pairs...))
				var a apiAnswer
				if err := json.Unmarshal([]byte(body), &a); err != nil {
					t.Fatalf("%s: %v: %s", path, err, body)
				}
				return status, a
			}
			for _, post := range []bool{false, true} {
				rangeQ := []string{"query", "max_over_time(g[1h])", "start", start, "end", end, "step", "3600"}
				_, raw := ask(post, "/api/v1/query_range", append(rangeQ, "resolution", "raw")...)
				status, auto := ask(post, "/api/v1/query_range", rangeQ...)
				if status != http.StatusOK || string(auto.Data) != string(raw.Data) || len(raw.Data) < 100 {
					t.Errorf("auto: %d %s\nraw: %s", status, auto.Data, raw.Data)
				}
				if want := []string{"PromQL info: served from the 1h rollup (the same answer as from raw data)"}; fmt.Sprint(auto.Infos) != fmt.Sprint(want) {
					t.Errorf("auto infos %q, want %q", auto.Infos, want)
				}
				if len(raw.Infos) != 0 {
					t.Errorf("raw infos %q, want none", raw.Infos)
				}

				// Which tables answered (stats=all): the rollup's cells of the
				// buckets the windows lie in (from the first window's start to
				// the last bucket holding data), and nothing else; raw data's
				// chunks when asked for raw.
				width := b.Settings.BucketWidth
				first := schema.BucketStart(rollupStart.Add(time.Hour+time.Millisecond).UnixMilli(), width)
				last := schema.BucketStart(rollupStart.Add(12*time.Hour-15*time.Second).UnixMilli(), width)
				rollupCells := (last-first)/width.Milliseconds() + 1
				_, autoStats := ask(post, "/api/v1/query_range", append(rangeQ, "stats", "all")...)
				_, rawStats := ask(post, "/api/v1/query_range", append(rangeQ, "stats", "all", "resolution", "raw")...)
				if got, want := cellsReadOf(t, autoStats), (cellsRead{RollupCells: rollupCells}); got != want {
					t.Errorf("auto read %+v, want %+v", got, want)
				}
				if got := cellsReadOf(t, rawStats); got.RawCells != 0 || got.ChunkCells == 0 || got.RollupCells != 0 {
					t.Errorf("raw read %+v, want chunk cells only", got)
				}

				// An unaligned step reads raw data, with no info.
				_, unaligned := ask(post, "/api/v1/query_range", "query", "max_over_time(g[1h])", "start", start, "end", end, "step", "3599")
				if len(unaligned.Infos) != 0 {
					t.Errorf("unaligned infos %q, want none", unaligned.Infos)
				}

				// A forced resolution is used and said to be approximate.
				status, forced := ask(post, "/api/v1/query_range", "query", "g", "start", start, "end", end, "step", "600", "resolution", "1h")
				if want := "PromQL info: served from the 1h rollup, as asked (resolution=1h); the answer may differ from raw data's"; status != http.StatusOK || len(forced.Infos) != 1 || forced.Infos[0] != want {
					t.Errorf("forced: %d infos %q, want %q", status, forced.Infos, want)
				}

				// Instant queries at an aligned time over a long range too.
				status, inst := ask(post, "/api/v1/query", "query", "max_over_time(g[6h])", "time", end)
				_, instRaw := ask(post, "/api/v1/query", "query", "max_over_time(g[6h])", "time", end, "resolution", "raw")
				if status != http.StatusOK || len(inst.Infos) != 1 || !strings.Contains(inst.Infos[0], "served from the 1h rollup") || string(inst.Data) != string(instRaw.Data) {
					t.Errorf("instant: %d %s infos %q; raw %s", status, inst.Data, inst.Infos, instRaw.Data)
				}

				status, bad := ask(post, "/api/v1/query_range", append(rangeQ, "resolution", "fast")...)
				if want := `invalid parameter "resolution": resolution "fast" is not auto, raw or a rollup resolution such as 5m`; status != http.StatusBadRequest || bad.Error != want {
					t.Errorf("resolution=fast: %d %q, want 400 %q", status, bad.Error, want)
				}
			}
		})
	}
}

// cellsReadOf returns the "hbtsdb" part of an answer's stats.
func cellsReadOf(t *testing.T, a apiAnswer) cellsRead {
	t.Helper()
	var data struct {
		Stats *struct {
			Hbtsdb *cellsRead `json:"hbtsdb"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(a.Data, &data); err != nil || data.Stats == nil || data.Stats.Hbtsdb == nil {
		t.Fatalf("no stats.hbtsdb in %s (%v)", a.Data, err)
	}
	return *data.Stats.Hbtsdb
}

// FuzzQueryParams: the parsers of the parameters promapi reads itself
// (resolution, time, start/end, step) never panic, and what they accept is
// consistent: a time parses to the same instant twice, a resolution prints
// back to text that parses to the same resolution.
func FuzzQueryParams(f *testing.F) {
	for _, s := range []string{"", "auto", "raw", "5m", "1h", "1700000000", "1700000000.123", "2026-11-20T00:00:00Z",
		"-1", "NaN", "Inf", "1e300", "15s", "0.5", "9223372036854775807", "1y2w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if res, err := query.ParseResolution(s); err == nil {
			again, err := query.ParseResolution(res.String())
			if err != nil || again != res {
				t.Fatalf("ParseResolution(%q) = %v, which prints as %q and parses to %v, %v", s, res, res.String(), again, err)
			}
		}
		if tm, err := parsePromTime(s); err == nil {
			if again, _ := parsePromTime(s); !again.Equal(tm) {
				t.Fatalf("parsePromTime(%q) = %v, then %v", s, tm, again)
			}
		}
		_, _ = parsePromDuration(s)
	})
}
