package index_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// Every test runs on the embedded store and on the real HBase.
func forEachBackend(t *testing.T, fn func(t *testing.T, b schematest.Backend)) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// formats are the store format versions the registry tests run on: counter IDs
// and hash-derived IDs.
var formats = []int{schema.FormatCounterSeriesIDs, schema.FormatHashSeriesIDs}

// forEachBackendAndFormat runs fn on every backend, once on a store of each
// format version.
func forEachBackendAndFormat(t *testing.T, fn func(t *testing.T, b schematest.Backend, format int)) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		for _, format := range formats {
			t.Run(fmt.Sprintf("format-%d", format), func(t *testing.T) {
				b := b
				b.Settings.FormatVersion = format
				fn(t, b, format)
			})
		}
	})
}

func resolve(t *testing.T, r *index.Registry, lbls ...labels.Labels) []uint64 {
	t.Helper()
	ids := make([]uint64, len(lbls))
	if err := r.Resolve(context.Background(), lbls, ids); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return ids
}

// forwardRows reads every forward row of the registry: canonical labels -> ID.
func forwardRows(t *testing.T, st kv.Store) map[string]uint64 {
	t.Helper()
	start := []byte{schema.SeriesForwardKind}
	sc := st.Scan(context.Background(), schema.TableSeries, start, kv.PrefixEnd(start))
	defer sc.Close()
	out := map[string]uint64{}
	for sc.Next() {
		row := sc.Row()
		lbls, err := schema.ParseSeriesForwardRow(row.Key)
		if err != nil {
			t.Fatal(err)
		}
		if len(row.Cells) != 1 {
			t.Fatalf("forward row %q has %d cells", row.Key, len(row.Cells))
		}
		id, err := schema.DecodeSeriesID(row.Cells[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint(lbls)] = id
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRegistry(t *testing.T) {
	forEachBackendAndFormat(t, func(t *testing.T, b schematest.Backend, format int) {
		ctx := context.Background()
		blocks := int64(0) // Increments of the counter to register 3 series
		if format == schema.FormatCounterSeriesIDs {
			blocks = 1
		}
		st := b.Store(t)
		up := labels.FromStrings("__name__", "up", "instance", "a:9100", "job", "node")
		upB := labels.FromStrings("__name__", "up", "instance", "b:9100", "job", "node")
		load := labels.FromStrings("__name__", "node_load1", "host", "h\x00x")

		t.Run("new series get distinct IDs, and the same label set the same ID", func(t *testing.T) {
			r := index.NewRegistry(st, index.RegistryOptions{})
			ids := resolve(t, r, up, upB, up, load)
			if ids[0] == 0 || ids[0] != ids[2] || ids[0] == ids[1] || ids[1] == ids[3] || ids[0] == ids[3] {
				t.Fatalf("ids = %v", ids)
			}
			if s := r.Stats(); s.Registered != 3 || s.IDBlocks != blocks || s.CacheHits != 0 || s.Collisions != 0 {
				t.Errorf("stats after registering 3 series: %+v", s)
			}
			again := resolve(t, r, load, up, upB)
			if !slices.Equal(again, []uint64{ids[3], ids[0], ids[1]}) {
				t.Errorf("second Resolve = %v, want %v", again, []uint64{ids[3], ids[0], ids[1]})
			}
			if s := r.Stats(); s.CacheHits != 3 || s.Registered != 3 {
				t.Errorf("stats after resolving from the cache: %+v", s)
			}

			// Another process (a registry with empty caches) reads the same IDs.
			other := index.NewRegistry(st, index.RegistryOptions{})
			if got := resolve(t, other, up, upB, load); !slices.Equal(got, []uint64{ids[0], ids[1], ids[3]}) {
				t.Errorf("another registry resolved %v, want %v", got, []uint64{ids[0], ids[1], ids[3]})
			}
			if s := other.Stats(); s.StoreHits != 3 || s.Registered != 0 || s.IDBlocks != 0 {
				t.Errorf("another registry's stats: %+v", s)
			}

			// The rows: one forward row per series, and the reverse rows.
			fwd := forwardRows(t, st)
			for i, ls := range []labels.Labels{up, upB, load} {
				want := []uint64{ids[0], ids[1], ids[3]}[i]
				if got := fwd[fmt.Sprint(toSchema(ls))]; got != want {
					t.Errorf("forward row of %s = %d, want %d", ls, got, want)
				}
			}
			got, err := other.Labels(ctx, []uint64{ids[3], ids[0], 999_999})
			if err != nil {
				t.Fatal(err)
			}
			if !labels.Equal(got[0], load) || !labels.Equal(got[1], up) || !got[2].IsEmpty() {
				t.Errorf("Labels = %v", got)
			}
		})

		t.Run("Lookup finds known series and does not register others", func(t *testing.T) {
			r := index.NewRegistry(st, index.RegistryOptions{})
			unknown := labels.FromStrings("__name__", "never_written")
			bad := labels.FromStrings("__name__", "x", "empty", "")
			ids := make([]uint64, 3)
			if err := r.Lookup(ctx, []labels.Labels{unknown, up, bad}, ids); err != nil {
				t.Fatal(err)
			}
			known := resolve(t, r, up)[0]
			if !slices.Equal(ids, []uint64{0, known, 0}) {
				t.Errorf("Lookup = %v, want [0 %d 0]", ids, known)
			}
			if _, ok := forwardRows(t, st)[fmt.Sprint(toSchema(unknown))]; ok {
				t.Errorf("Lookup registered %s", unknown)
			}
		})

		t.Run("a label set that is not canonical is refused", func(t *testing.T) {
			r := index.NewRegistry(st, index.RegistryOptions{})
			ids := make([]uint64, 1)
			err := r.Resolve(ctx, []labels.Labels{labels.FromStrings("__name__", "x", "empty", "")}, ids)
			if !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("Resolve of a label with an empty value: %v, want ErrMalformed", err)
			}
		})

		// Format 2's IDs are hashes: it takes no block (counter IDs only for
		// hash collisions, TestHashCollisions).
		t.Run("IDs come in blocks (format 1) and never repeat", func(t *testing.T) {
			perBlock := int64(1)
			if format != schema.FormatCounterSeriesIDs {
				perBlock = 0
			}
			r := index.NewRegistry(st, index.RegistryOptions{IDBlockSize: 2})
			seen := map[uint64]bool{}
			for i := range 5 {
				id := resolve(t, r, labels.FromStrings("__name__", "blocks", "i", fmt.Sprint(i)))[0]
				if seen[id] {
					t.Fatalf("ID %d handed out twice", id)
				}
				seen[id] = true
			}
			// 5 series in blocks of 2: three increments.
			if s := r.Stats(); s.IDBlocks != 3*perBlock {
				t.Errorf("IDBlocks = %d, want %d", s.IDBlocks, 3*perBlock)
			}
			// A batch bigger than a block reserves it in one increment.
			var batch []labels.Labels
			for i := range 7 {
				batch = append(batch, labels.FromStrings("__name__", "big_batch", "i", fmt.Sprint(i)))
			}
			ids := resolve(t, r, batch...)
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("ID %d handed out twice", id)
				}
				seen[id] = true
			}
			if s := r.Stats(); s.IDBlocks != 4*perBlock {
				t.Errorf("IDBlocks = %d after a batch of 7 with one ID left, want %d", s.IDBlocks, 4*perBlock)
			}
		})
	})
}

// TestRacingRegistriesAgreeOnOneID: 4 registries on 2 store handles (two processes'
// worth on HBase) register overlapping new series at once; every series ends with
// exactly one ID, the one every registry returned. On both formats.
func TestRacingRegistriesAgreeOnOneID(t *testing.T) {
	forEachBackendAndFormat(t, func(t *testing.T, b schematest.Backend, _ int) {
		sts := b.Stores(t, 2)
		const series = 200
		all := make([]labels.Labels, series)
		for i := range all {
			all[i] = labels.FromStrings("__name__", "race", "i", fmt.Sprint(i))
		}
		results := make([][]uint64, 4)
		var wg sync.WaitGroup
		for w := range results {
			wg.Go(func() {
				r := index.NewRegistry(sts[w%2], index.RegistryOptions{IDBlockSize: 10})
				// Each writer takes the series in its own order and overlapping halves.
				lbls := slices.Clone(all)
				if w%2 == 1 {
					slices.Reverse(lbls)
				}
				ids := make([]uint64, len(lbls))
				for start := 0; start < len(lbls); start += 25 {
					end := min(start+25, len(lbls))
					if err := r.Resolve(context.Background(), lbls[start:end], ids[start:end]); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
				if w%2 == 1 {
					slices.Reverse(ids)
				}
				results[w] = ids
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		fwd := forwardRows(t, sts[0])
		if len(fwd) != series {
			t.Errorf("%d forward rows, want %d", len(fwd), series)
		}
		ids := map[uint64]bool{}
		for i, ls := range all {
			want := fwd[fmt.Sprint(toSchema(ls))]
			for w := range results {
				if results[w][i] != want {
					t.Errorf("writer %d resolved %s to %d, the forward row says %d", w, ls, results[w][i], want)
				}
			}
			if ids[want] {
				t.Errorf("ID %d belongs to two series", want)
			}
			ids[want] = true
		}
	})
}

func TestPostings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		st := b.Store(t)
		p := index.NewPostings(st, index.PostingsOptions{})
		day := schema.Day(time.Now().UnixMilli())
		a := labels.FromStrings("__name__", "up", "job", "node", "instance", "a")
		bb := labels.FromStrings("__name__", "up", "job", "node", "instance", "b", "empty", "")
		c := labels.FromStrings("__name__", "load", "job_x", "node\x00y", "instance", "a")
		entries := []index.Entry{
			{Day: day, SeriesID: 7, Labels: a},
			{Day: day, SeriesID: 3, Labels: bb},
			{Day: day, SeriesID: 300, Labels: c},
			{Day: day - 1, SeriesID: 7, Labels: a},
			{Day: day, SeriesID: 7, Labels: a}, // twice in one batch
		}
		n, err := p.Write(ctx, entries)
		if err != nil || n != 4 {
			t.Fatalf("Write = %d, %v; want 4 entries written", n, err)
		}

		t.Run("postings of a label pair are the series IDs, ascending", func(t *testing.T) {
			for _, tc := range []struct {
				day         uint32
				name, value string
				want        []uint64
			}{
				{day, "__name__", "up", []uint64{3, 7}},
				{day, "job", "node", []uint64{3, 7}},
				{day, "instance", "a", []uint64{7, 300}},
				{day, "job_x", "node\x00y", []uint64{300}},
				{day - 1, "__name__", "up", []uint64{7}},
				{day - 1, "instance", "b", nil},
				{day, "empty", "", nil},
				{day + 1, "__name__", "up", nil},
			} {
				got, err := p.Equal(ctx, tc.day, tc.name, tc.value)
				if err != nil || !slices.Equal(got, tc.want) {
					t.Errorf("Postings(%d, %s=%q) = %v, %v; want %v", tc.day-day, tc.name, tc.value, got, err, tc.want)
				}
			}
		})

		t.Run("label names and values of a day", func(t *testing.T) {
			names, err := p.LabelNames(ctx, day)
			if want := []string{"__name__", "instance", "job", "job_x"}; err != nil || !slices.Equal(names, want) {
				t.Errorf("LabelNames(today) = %q, %v; want %q", names, err, want)
			}
			names, err = p.LabelNames(ctx, day-1)
			if want := []string{"__name__", "instance", "job"}; err != nil || !slices.Equal(names, want) {
				t.Errorf("LabelNames(yesterday) = %q, %v; want %q", names, err, want)
			}
			if names, err := p.LabelNames(ctx, day+1); err != nil || len(names) != 0 {
				t.Errorf("LabelNames(tomorrow) = %q, %v", names, err)
			}
			values, err := p.LabelValues(ctx, day, "instance")
			if want := []string{"a", "b"}; err != nil || !slices.Equal(values, want) {
				t.Errorf("LabelValues(instance) = %q, %v; want %q", values, err, want)
			}
			values, err = p.LabelValues(ctx, day, "job")
			if want := []string{"node"}; err != nil || !slices.Equal(values, want) {
				t.Errorf("LabelValues(job) = %q, %v; want %q (not job_x's)", values, err, want)
			}
			all, err := p.LabelSeries(ctx, day, "__name__")
			if want := []uint64{3, 7, 300}; err != nil || !slices.Equal(all, want) {
				t.Errorf("LabelSeries(__name__) = %v, %v; want %v", all, err, want)
			}
		})

		t.Run("a posting's cell timestamp is the start of its day", func(t *testing.T) {
			row, err := st.Get(ctx, schema.TableIndex, schema.IndexRowKey(nil, schema.IndexKey{Day: day - 1, Name: "job", Value: "node"}))
			if err != nil || len(row.Cells) != 1 {
				t.Fatalf("row = %+v, %v", row, err)
			}
			if c := row.Cells[0]; c.Timestamp != schema.DayStart(day-1) || len(c.Value) != 0 {
				t.Errorf("cell timestamp %d, value %q; want %d and empty", c.Timestamp, c.Value, schema.DayStart(day-1))
			}
		})

		t.Run("postings are written once per series and day", func(t *testing.T) {
			if n, err := p.Write(ctx, entries); err != nil || n != 0 {
				t.Errorf("rewriting = %d, %v; want 0 written", n, err)
			}
			if n, err := index.NewPostings(st, index.PostingsOptions{}).Write(ctx, entries[:1]); err != nil || n != 1 {
				t.Errorf("another process writes = %d, %v; want 1", n, err)
			}
		})

		t.Run("a failed write is not remembered", func(t *testing.T) {
			if err := st.DropTable(ctx, schema.TableIndex); err != nil {
				t.Fatal(err)
			}
			e := []index.Entry{{Day: day, SeriesID: 42, Labels: a}}
			if n, err := p.Write(ctx, e); err == nil || n != 0 {
				t.Fatalf("Write without an index table = %d, %v; want an error", n, err)
			}
			schematest.Create(t, st, b.Settings) // recreates the index table
			if n, err := p.Write(ctx, e); err != nil || n != 1 {
				t.Errorf("Write after the failure = %d, %v; want 1", n, err)
			}
			if got, err := p.Equal(ctx, day, "job", "node"); err != nil || !slices.Equal(got, []uint64{42}) {
				t.Errorf("Postings after the retry = %v, %v", got, err)
			}
		})
	})
}

func toSchema(ls labels.Labels) []schema.Label {
	var out []schema.Label
	ls.Range(func(l labels.Label) { out = append(out, schema.Label{Name: l.Name, Value: l.Value}) })
	return out
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"zero registry options take the defaults", index.RegistryOptions{}.Validate(), ""},
		{"negative cache sizes disable the caches", index.RegistryOptions{SeriesCacheSize: -1, LabelsCacheSize: -1}.Validate(), ""},
		{"a negative ID block size and parallelism are refused", index.RegistryOptions{IDBlockSize: -1, RegisterParallelism: -2}.Validate(),
			"index: RegistryOptions.IDBlockSize must not be negative (0 means the default, 1000), got -1\n" +
				"index: RegistryOptions.RegisterParallelism must not be negative (0 means the default, 16), got -2"},
		{"a format version this binary does not know is refused", index.RegistryOptions{FormatVersion: schema.CurrentFormatVersion + 1}.Validate(),
			"index: RegistryOptions.FormatVersion must be 1 to 2 (0 reads it from the store), got 3: unsupported schema format version"},
		{"format versions 1 and 2 are valid", errors.Join(index.RegistryOptions{FormatVersion: 1}.Validate(), index.RegistryOptions{FormatVersion: 2}.Validate()), ""},
		{"zero postings options take the defaults", index.PostingsOptions{SeenSize: -1}.Validate(), ""},
		{"a negative postings batch is refused", index.PostingsOptions{MaxBatch: -3}.Validate(),
			"index: PostingsOptions.MaxBatch must not be negative (0 means the default, 10000), got -3"},
	} {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
