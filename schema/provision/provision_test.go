package provision_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
)

// newEmbeddedStore opens an empty embedded store for one test.
func newEmbeddedStore(t *testing.T) kv.Store {
	t.Helper()
	st, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

var metaTests = []struct {
	name string
	run  func(*testing.T, func(*testing.T) kv.Store)
}{
	{"AStoreWithoutSchemaIsNotCreated", testAStoreWithoutSchemaIsNotCreated},
	{"CreateMakesTablesAndAReadableMetaRow", testCreateMakesTablesAndAReadableMetaRow},
	{"OpenAutoCreates", testOpenAutoCreates},
	{"AMismatchNamesBothValuesAndTheFix", testAMismatchNamesBothValuesAndTheFix},
	{"ConcurrentCreatorsSettleOnOneClaim", testConcurrentCreatorsSettleOnOneClaim},
	{"CreateCompletesAnInterruptedCreationFromItsClaim", testCreateCompletesAnInterruptedCreationFromItsClaim},
	{"AMalformedClaimIsReported", testAMalformedClaimIsReported},
	{"ANewerFormatIsRefused", testANewerFormatIsRefused},
	{"CreateRejectsInvalidSettings", testCreateRejectsInvalidSettings},
	{"TheLayoutInARealStore", testTheLayoutInARealStore},
}

func newHBaseStore(t *testing.T) kv.Store { return hbasestore.NewStore(t) }

// TestMetaRow runs every meta-row test on both backends: the schema meta row must
// behave the same on the embedded store and on a real HBase.
func TestMetaRow(t *testing.T) {
	backends := []struct {
		name     string
		newStore func(*testing.T) kv.Store
	}{{"embedded", newEmbeddedStore}, {"hbase", newHBaseStore}}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range metaTests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, b.newStore)
				})
			}
		})
	}
}

func withSalt(s schema.Settings, buckets int) schema.Settings {
	s.Salts = buckets
	return s
}

func withHostLabels(s schema.Settings, names ...string) schema.Settings {
	s.HostLabels = names
	return s
}

func testAStoreWithoutSchemaIsNotCreated(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	want := schema.DefaultEmbeddedSettings()
	for name, err := range map[string]error{
		"Check": func() error { _, err := provision.Check(ctx, st, want); return err }(),
		"Read":  func() error { _, err := provision.Read(ctx, st); return err }(),
		"Open without auto-create": func() error {
			_, err := provision.Open(ctx, st, want, schema.TableOptions{}, false)
			return err
		}(),
	} {
		if !errors.Is(err, schema.ErrNotCreated) || !strings.Contains(err.Error(), "tsdb schema create") {
			t.Errorf("%s on an empty store: %v; want ErrNotCreated telling to run tsdb schema create", name, err)
		}
	}
	if tables, err := st.ListTables(ctx); err != nil || len(tables) != 0 {
		t.Errorf("checking created tables %v, %v", tables, err)
	}
	// A meta table without the row is not created either.
	if _, err := st.EnsureTable(ctx, schema.Tables(schema.DefaultTableOptions())[3]); err != nil {
		t.Fatal(err)
	}
	if _, err := provision.Check(ctx, st, want); !errors.Is(err, schema.ErrNotCreated) {
		t.Errorf("Check with an empty meta table: %v; want ErrNotCreated", err)
	}
}

func testCreateMakesTablesAndAReadableMetaRow(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	want := schema.Settings{FormatVersion: 1, BucketWidth: 2 * time.Hour, Salts: 4, HostLabels: schema.DefaultHostLabels()}
	opts := schema.DefaultTableOptions()
	opts.Salts = 0 // taken from the settings
	if err := provision.Create(ctx, st, want, opts); err != nil {
		t.Fatal(err)
	}
	tables, err := st.ListTables(ctx)
	if err != nil || !slices.Equal(tables, []string{"data", "exemplars", "index", "meta", "pending", "rollup-1h", "rollup-5m", "series"}) {
		t.Errorf("tables after Create: %v, %v", tables, err)
	}
	row, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range row.Cells {
		got[c.Family+":"+string(c.Qualifier)] = string(c.Value)
	}
	wantCells := map[string]string{
		"m:format_version":     "1",
		"m:bucket_width_ms":    "7200000",
		"m:salt_buckets":       "4",
		"m:host_labels":        "host,instance",
		"m:claim":              "format_version=1 bucket_width_ms=7200000 salt_buckets=4 host_labels=host,instance",
		"m:rollups":            "5m:90d,1h:5y",
		"m:raw_retention":      "400d",
		"m:exemplar_retention": "30d",
		"m:index_ttl":          "1826d",
	}
	if len(got) != len(wantCells) {
		t.Errorf("meta row %v, want %v", got, wantCells)
	}
	for k, v := range wantCells {
		if got[k] != v {
			t.Errorf("meta row %s = %q, want %q", k, got[k], v)
		}
	}
	if s, err := provision.Check(ctx, st, want); err != nil || !s.Equal(want) {
		t.Errorf("Check after Create = %+v, %v", s, err)
	}
	if err := provision.Create(ctx, st, want, opts); err != nil {
		t.Errorf("a second Create with the same settings: %v", err)
	}
	if s, err := provision.Open(ctx, st, want, opts, false); err != nil || !s.Equal(want) {
		t.Errorf("Open after Create = %+v, %v", s, err)
	}
}

func testOpenAutoCreates(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	want := schema.DefaultEmbeddedSettings()
	s, err := provision.Open(ctx, st, want, schema.DefaultTableOptions(), true)
	if err == nil {
		t.Fatalf("Open with table options for 16 salts and settings for 1 = %+v, want an error", s)
	}
	opts := schema.DefaultTableOptions()
	opts.Salts = want.Salts
	if s, err := provision.Open(ctx, st, want, opts, true); err != nil || !s.Equal(want) {
		t.Fatalf("Open with auto-create = %+v, %v", s, err)
	}
	if s, err := provision.Open(ctx, st, want, opts, false); err != nil || !s.Equal(want) {
		t.Errorf("a second Open = %+v, %v", s, err)
	}
}

func testAMismatchNamesBothValuesAndTheFix(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	created := schema.DefaultHBaseSettings()
	if err := provision.Create(ctx, st, created, schema.DefaultTableOptions()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want schema.Settings
		msg  string
	}{
		{"salts", withSalt(created, 1),
			"schema: salts: the store was created with 16, this process is configured with 1: start with --schema.salts=16 or use another store"},
		{"bucket width", schema.Settings{FormatVersion: 1, BucketWidth: 30 * time.Minute, Salts: 16, HostLabels: schema.DefaultHostLabels()},
			"schema: bucket width: the store was created with 1h, this process is configured with 30m: start with --schema.bucket-width=1h or use another store"},
		{"both", schema.Settings{FormatVersion: 1, BucketWidth: 90 * time.Second, Salts: 2, HostLabels: schema.DefaultHostLabels()},
			"schema: bucket width: the store was created with 1h, this process is configured with 1m30s: start with --schema.bucket-width=1h or use another store; " +
				"schema: salts: the store was created with 16, this process is configured with 2: start with --schema.salts=16 or use another store"},
		{"host labels", withHostLabels(created, "node", "host"),
			"schema: host labels: the store was created with host,instance, this process is configured with node,host: start with --schema.host-labels=host,instance or use another store"},
		{"host labels in another order", withHostLabels(created, "instance", "host"),
			"schema: host labels: the store was created with host,instance, this process is configured with instance,host: start with --schema.host-labels=host,instance or use another store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := provision.Check(ctx, st, tc.want)
			if !errors.Is(err, schema.ErrMismatch) || err.Error() != tc.msg {
				t.Errorf("Check = %v\nwant ErrMismatch: %s", err, tc.msg)
			}
			if !got.Equal(created) {
				t.Errorf("Check returned %+v, want the store's %+v", got, created)
			}
			opts := schema.DefaultTableOptions()
			opts.Salts = tc.want.Salts
			for name, err := range map[string]error{
				"Create": provision.Create(ctx, st, tc.want, opts),
				"Open":   func() error { _, err := provision.Open(ctx, st, tc.want, opts, true); return err }(),
			} {
				if !errors.Is(err, schema.ErrMismatch) {
					t.Errorf("%s = %v, want ErrMismatch", name, err)
				}
			}
		})
	}
}

func testConcurrentCreatorsSettleOnOneClaim(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	for round := range 5 {
		st := newStore(t)
		a := schema.DefaultEmbeddedSettings()
		b := withSalt(a, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				want := a
				if i%2 == 1 {
					want = b
				}
				opts := schema.DefaultTableOptions()
				opts.Salts = want.Salts
				errs[i] = provision.Create(ctx, st, want, opts)
			})
		}
		wg.Wait()
		stored, err := provision.Read(ctx, st)
		if err != nil {
			t.Fatalf("round %d: Read after racing creators: %v", round, err)
		}
		if !stored.Equal(a) && !stored.Equal(b) {
			t.Fatalf("round %d: stored settings %+v are neither creator's", round, stored)
		}
		for i, err := range errs {
			won := (i%2 == 0) == stored.Equal(a)
			if won && err != nil || !won && !errors.Is(err, schema.ErrMismatch) {
				t.Errorf("round %d: creator %d (settings of the stored side: %v) got %v", round, i, won, err)
			}
		}
	}
}

func testCreateCompletesAnInterruptedCreationFromItsClaim(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	for _, spec := range schema.Tables(schema.TableOptions{Salts: 1}) {
		if _, err := st.EnsureTable(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	// A creator that claimed 4 salts, then died before writing the row.
	claimed := withSalt(schema.DefaultEmbeddedSettings(), 4)
	ok, err := st.CheckAndPut(ctx, schema.TableMeta, nil, kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta,
		[]byte(schema.QualifierSchemaClaim), 1, []byte(claimed.String())))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := provision.Check(ctx, st, claimed); !errors.Is(err, schema.ErrNotCreated) || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("Check of an interrupted creation: %v; want ErrNotCreated saying it was interrupted", err)
	}
	// Another creator, configured differently, completes the claimed settings and
	// reports the mismatch.
	if err := provision.Create(ctx, st, schema.DefaultEmbeddedSettings(), schema.TableOptions{Salts: 1}); !errors.Is(err, schema.ErrMismatch) {
		t.Errorf("Create against another's claim = %v, want ErrMismatch", err)
	}
	if s, err := provision.Check(ctx, st, claimed); err != nil || !s.Equal(claimed) {
		t.Errorf("Check of the completed row = %+v, %v; want %+v", s, err, claimed)
	}
}

func testAMalformedClaimIsReported(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	opts := schema.TableOptions{Salts: 1}
	for _, spec := range schema.Tables(opts) {
		if _, err := st.EnsureTable(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	err := st.Apply(ctx, schema.TableMeta, []kv.Mutation{
		kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta, []byte(schema.QualifierSchemaClaim), 1, []byte("salt_buckets=1")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := provision.Create(ctx, st, schema.DefaultEmbeddedSettings(), opts); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("Create against a malformed claim = %v, want ErrMalformed", err)
	}
	if _, err := provision.Read(ctx, st); !errors.Is(err, schema.ErrNotCreated) {
		t.Errorf("Read with only a malformed claim = %v, want ErrNotCreated", err)
	}
}

func testANewerFormatIsRefused(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	want := schema.DefaultEmbeddedSettings()
	if _, err := provision.Open(ctx, st, want, schema.TableOptions{Salts: 1}, true); err != nil {
		t.Fatal(err)
	}
	err := st.Apply(ctx, schema.TableMeta, []kv.Mutation{
		kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta, []byte(schema.QualifierFormatVersion), time.Now().UnixMilli()+1000, []byte(strconv.Itoa(schema.CurrentFormatVersion+1))),
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Check": func() error { _, err := provision.Check(ctx, st, want); return err }(),
		"Open": func() error {
			_, err := provision.Open(ctx, st, want, schema.TableOptions{Salts: 1}, true)
			return err
		}(),
		"Create": provision.Create(ctx, st, want, schema.TableOptions{Salts: 1}),
	} {
		if !errors.Is(err, schema.ErrUnsupportedFormat) || !strings.Contains(err.Error(), "upgrade") {
			t.Errorf("%s of a store of format %d: %v; want ErrUnsupportedFormat", name, schema.CurrentFormatVersion+1, err)
		}
	}
}

func testCreateRejectsInvalidSettings(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	bad := schema.Settings{FormatVersion: 1, BucketWidth: 7 * time.Hour, Salts: 1, HostLabels: schema.DefaultHostLabels()}
	if err := provision.Create(ctx, st, bad, schema.TableOptions{}); !errors.Is(err, kv.ErrInvalidArgument) {
		t.Errorf("Create with a 7h bucket: %v", err)
	}
	if tables, _ := st.ListTables(ctx); len(tables) != 0 {
		t.Errorf("a rejected Create made tables %v", tables)
	}
}

// testTheLayoutInARealStore writes raw samples under data row keys and reads them
// back the way readers will: the newest row of a series first, values bit-exact.
func testTheLayoutInARealStore(t *testing.T, newStore func(*testing.T) kv.Store) {
	ctx := context.Background()
	st := newStore(t)
	settings := schema.DefaultEmbeddedSettings()
	if _, err := provision.Open(ctx, st, settings, schema.TableOptions{Salts: 1}, true); err != nil {
		t.Fatal(err)
	}
	width := settings.BucketWidth
	now := time.Now().UnixMilli()
	stale := math.Float64frombits(0x7ff0000000000002)
	type sample struct {
		host string
		id   uint64
		ts   int64
		v    float64
	}
	samples := []sample{
		{"a", 1, now - 3*width.Milliseconds(), 1},
		{"a", 1, now - width.Milliseconds(), 2},
		{"a", 1, now, stale},
		{"a\x00b", 1, now + 1, 99}, // a host that has "a" as a prefix
		{"a", 2, now + 2, 98},      // another series of the same metric
	}
	var muts []kv.Mutation
	for _, s := range samples {
		bs := schema.BucketStart(s.ts, width)
		row := schema.DataRowKey(nil, schema.DataKey{Salt: schema.Salt(s.host, 1), Host: s.host, Metric: "up", SeriesID: s.id, BucketStart: bs})
		q, err := schema.AppendRawQualifier(nil, s.ts-bs, width)
		if err != nil {
			t.Fatal(err)
		}
		muts = append(muts, kv.Put(row, schema.FamilyRaw, q, s.ts, cellenc.AppendRawValue(nil, s.v)))
	}
	if err := st.Apply(ctx, schema.TableData, muts); err != nil {
		t.Fatal(err)
	}
	prefix := schema.SeriesPrefix(nil, schema.Salt("a", 1), "a", "up", 1)
	sc := st.Scan(ctx, schema.TableData, prefix, kv.PrefixEnd(prefix), kv.RowLimit(1))
	defer sc.Close()
	if !sc.Next() {
		t.Fatalf("no row for the series: %v", sc.Err())
	}
	row := sc.Row()
	k, err := schema.ParseDataRowKey(row.Key)
	if err != nil || k.Host != "a" || k.SeriesID != 1 || k.BucketStart != schema.BucketStart(now, width) {
		t.Fatalf("first row of the series is %+v, %v; want the newest bucket of series 1 on host a", k, err)
	}
	if len(row.Cells) != 1 {
		t.Fatalf("newest row has %d cells, want 1", len(row.Cells))
	}
	c := row.Cells[0]
	off, err := schema.DecodeRawQualifier(c.Qualifier, width)
	if err != nil || k.BucketStart+off != now || c.Timestamp != now {
		t.Errorf("cell at offset %d (%v), timestamp %d; want the sample at %d", off, err, c.Timestamp, now)
	}
	v, err := cellenc.DecodeRawValue(c.Value)
	if err != nil || math.Float64bits(v) != 0x7ff0000000000002 {
		t.Errorf("stale marker came back as %#x, %v", math.Float64bits(v), err)
	}
	if sc.Next() {
		t.Errorf("a row limit of 1 returned more rows")
	}
}
