package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
)

// TestSchemaCheckWithoutTheExemplarTable: a store made before exemplars were
// stored (no exemplar table, no recorded retention) fails tsdb schema check,
// which says what to run; tsdb schema create adds the table and check passes.
func TestSchemaCheckWithoutTheExemplarTable(t *testing.T) {
	store, withStore := createdStore(t)
	withStore(func(ctx context.Context, st kv.Store) error {
		if err := st.DropTable(ctx, schema.TableExemplars); err != nil {
			return err
		}
		return st.Apply(ctx, schema.TableMeta, []kv.Mutation{kv.DeleteColumn([]byte(schema.MetaSchemaRow), schema.FamilyMeta,
			[]byte(schema.QualifierExemplarRetention), kv.MaxTimestamp)})
	})

	code, out, stderr := tsdb(t, "schema", "check", "--print", store)
	want := "tsdb schema check: schema: the store has no exemplar table exemplars (it was created before exemplars were stored): " +
		"run `tsdb schema create` with the same flags to add it, or enable schema auto-create: schema not created\n"
	if code != 1 || !strings.HasSuffix(stderr, want) ||
		!strings.Contains(out, "exemplar_retention: (not recorded; tsdb serve records --retention.exemplars=30d at start)\ntables: data index meta pending rollup-1h rollup-5m series\n") {
		t.Errorf("schema check: exit %d, stdout %q, stderr %q; want exit 1 and stderr ending %q", code, out, stderr, want)
	}
	if code, _, stderr := tsdb(t, "schema", "create", store); code != 0 {
		t.Fatalf("schema create on the old store: exit %d: %s", code, stderr)
	}
	code, out, stderr = tsdb(t, "schema", "check", "--print", store)
	if code != 0 || !strings.Contains(out, "exemplar_retention: 30d\ntables: data exemplars index meta pending rollup-1h rollup-5m series\n") {
		t.Errorf("schema check after create: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// createdStore makes an embedded store with tsdb schema create and returns its
// --storage flag and a function that runs f on the store opened (no tsdb may
// hold it), failing the test on f's error.
func createdStore(t *testing.T) (string, func(f func(ctx context.Context, st kv.Store) error)) {
	t.Helper()
	dir := t.TempDir()
	store := "--storage=embedded:" + dir
	if code, _, stderr := tsdb(t, "schema", "create", store); code != 0 {
		t.Fatalf("schema create: exit %d: %s", code, stderr)
	}
	return store, func(f func(ctx context.Context, st kv.Store) error) {
		t.Helper()
		ctx := context.Background()
		st, err := embedded.Open(ctx, dir, embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		err = f(ctx, st)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
