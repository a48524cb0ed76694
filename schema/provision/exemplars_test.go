package provision_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// TestExemplarTable: Create makes the exemplar table with the exemplar
// retention as its family's TTL and records it; a store made before exemplars
// (no table, no record) is refused by Open without auto-create, with what to
// run, and gets the table and the record from Open with auto-create; a
// process with another retention is refused, naming both and what to do.
func TestExemplarTable(t *testing.T) {
	ctx := context.Background()
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			b.TableOptions.ExemplarRetention = 5 * 24 * time.Hour
			st := b.Store(t) // schema create with --retention.exemplars=5d
			if d, ok, err := provision.ReadExemplarRetention(ctx, st); err != nil || !ok || d != 5*24*time.Hour {
				t.Fatalf("ReadExemplarRetention = %s, %v, %v; want 5d", d, ok, err)
			}
			spec := schema.ExemplarTable(b.TableOptions)
			if len(spec.Families) != 1 || spec.Families[0] != (kv.FamilySpec{Name: "e", MaxVersions: 1, TTL: 5 * 24 * time.Hour,
				Compression: "NONE", BlockEncoding: "FAST_DIFF", BloomFilter: "ROW", InMemoryCompaction: "BASIC"}) || len(spec.SplitKeys) != b.Settings.Salts-1 {
				t.Errorf("exemplar table spec %+v", spec)
			}
			if tables, err := st.ListTables(ctx); err != nil || !slices.Contains(tables, "exemplars") {
				t.Fatalf("tables %v, %v; want exemplars among them", tables, err)
			}

			dropExemplars(t, st)
			_, err := provision.Open(ctx, st, b.Settings, b.TableOptions, false)
			want := "schema: the store has no exemplar table exemplars (it was created before exemplars were stored): " +
				"run `tsdb schema create` with the same flags to add it, or enable schema auto-create: schema not created"
			if !errors.Is(err, schema.ErrNotCreated) || err.Error() != want {
				t.Errorf("Open without auto-create:\n%v\nwant\n%s", err, want)
			}
			// tsdb schema create adds it.
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime}))
			if err := provision.Create(ctx, st, b.Settings, b.TableOptions, provision.WithLogger(logger)); err != nil {
				t.Fatalf("Create: %v", err)
			}
			if want := "level=INFO msg=\"exemplar retention recorded\" retention=5d\n"; logs.String() != want {
				t.Errorf("Create logged:\n%s\nwant\n%s", logs.String(), want)
			}
			if d, ok, err := provision.ReadExemplarRetention(ctx, st); err != nil || !ok || d != 5*24*time.Hour {
				t.Errorf("ReadExemplarRetention after Create = %s, %v, %v; want 5d", d, ok, err)
			}

			// tsdb serve (Open with auto-create) adds it too.
			dropExemplars(t, st)
			logs.Reset()
			if _, err := provision.Open(ctx, st, b.Settings, b.TableOptions, true, provision.WithLogger(logger)); err != nil {
				t.Fatalf("Open with auto-create: %v", err)
			}
			if want := "level=INFO msg=\"exemplar table created\" table=exemplars retention=5d\n" +
				"level=INFO msg=\"exemplar retention recorded\" retention=5d\n"; logs.String() != want {
				t.Errorf("Open logged:\n%s\nwant\n%s", logs.String(), want)
			}
			if tables, err := st.ListTables(ctx); err != nil || !slices.Contains(tables, "exemplars") {
				t.Errorf("tables after Open %v, %v; want exemplars among them", tables, err)
			}
			if d, ok, err := provision.ReadExemplarRetention(ctx, st); err != nil || !ok || d != 5*24*time.Hour {
				t.Errorf("ReadExemplarRetention after Open = %s, %v, %v; want 5d", d, ok, err)
			}
			// The table works: a cell written is read back.
			row := []byte("r")
			if err := st.Apply(ctx, schema.TableExemplars, []kv.Mutation{kv.Put(row, schema.FamilyExemplars, []byte("q"), time.Now().UnixMilli(), []byte("v"))}); err != nil {
				t.Fatal(err)
			}
			if r, err := st.Get(ctx, schema.TableExemplars, row); err != nil || len(r.Cells) != 1 {
				t.Errorf("read back %+v, %v", r, err)
			}

			// Another retention is refused.
			opts := b.TableOptions
			opts.ExemplarRetention = 0
			var options []provision.Option
			if b.Name == "hbase" {
				options = append(options, provision.WithHBaseTablePrefix("tsdb-"))
			}
			_, err = provision.Open(ctx, st, b.Settings, opts, true, options...)
			want = "schema: the store keeps exemplars for 5d, this process is configured to keep them forever (--retention.exemplars=0); " +
				"the retention is the TTL of table exemplars, set when it was created, and tsdb cannot change it: start with --retention.exemplars=5d"
			if b.Name == "hbase" {
				want += ", or change the TTL in the HBase shell with alter 'tsdb-exemplars', NAME => 'e', TTL => 'FOREVER', " +
					"then record it with put 'tsdb-meta', 'schema', 'm:exemplar_retention', '0'"
			} else {
				want += " (an embedded store's table TTL cannot be changed)"
			}
			if !errors.Is(err, schema.ErrMismatch) || err.Error() != want {
				t.Errorf("Open with another retention:\n%v\nwant\n%s", err, want)
			}
			if err := provision.Create(ctx, st, b.Settings, opts); !errors.Is(err, schema.ErrMismatch) || !strings.Contains(err.Error(), "keeps exemplars for 5d") {
				t.Errorf("Create with another retention: %v", err)
			}
		})
	}
}

// dropExemplars makes st a store of a version before exemplars: no exemplar
// table, no recorded exemplar retention.
func dropExemplars(t *testing.T, st kv.Store) {
	t.Helper()
	ctx := context.Background()
	if err := st.DropTable(ctx, schema.TableExemplars); err != nil {
		t.Fatal(err)
	}
	// Deleted up to the cell's own timestamp: an HBase tombstone up to a
	// later one would hide the cell Open records.
	meta, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range meta.Cells {
		if string(c.Qualifier) != schema.QualifierExemplarRetention {
			continue
		}
		if err := st.Apply(ctx, schema.TableMeta, []kv.Mutation{kv.DeleteColumn([]byte(schema.MetaSchemaRow), schema.FamilyMeta,
			c.Qualifier, c.Timestamp)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := provision.ReadExemplarRetention(ctx, st); err != nil || ok {
		t.Fatalf("the record was not deleted: %v, %v", ok, err)
	}
}

// dropTime removes the time attribute of log lines.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}
