package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// TestSchemaCheckWithoutThePendingTable: a store made before compaction kept
// its pending table fails tsdb schema check, which says what to run; tsdb
// schema create adds the table and records when, so that compaction sweeps
// the raw cells written before it once (compact/doc.go).
func TestSchemaCheckWithoutThePendingTable(t *testing.T) {
	store, withStore := createdStore(t)
	withStore(func(ctx context.Context, st kv.Store) error { return st.DropTable(ctx, schema.TablePending) })

	code, out, stderr := tsdb(t, "schema", "check", "--print", store)
	want := "tsdb schema check: schema: the store has no pending table pending (it was created before compaction kept one): " +
		"run `tsdb schema create` with the same flags to add it, or enable schema auto-create: schema not created\n"
	if code != 1 || !strings.HasSuffix(stderr, want) || !strings.Contains(out, "tables: data exemplars index meta rollup-1h rollup-5m series\n") {
		t.Errorf("schema check: exit %d, stdout %q, stderr %q; want exit 1 and stderr ending %q", code, out, stderr, want)
	}
	if code, _, stderr := tsdb(t, "schema", "create", store); code != 0 {
		t.Fatalf("schema create on the old store: exit %d: %s", code, stderr)
	}
	code, out, stderr = tsdb(t, "schema", "check", "--print", store)
	if code != 0 || !strings.Contains(out, "tables: data exemplars index meta pending rollup-1h rollup-5m series\n") {
		t.Errorf("schema check after create: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	withStore(func(ctx context.Context, st kv.Store) error {
		r, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow))
		if err != nil {
			return err
		}
		for _, c := range r.Cells {
			if string(c.Qualifier) == schema.QualifierPendingSince {
				if _, err := schema.ParsePendingSince(c.Value); err != nil {
					t.Errorf("the recorded moment: %v", err)
				}
				return nil
			}
		}
		t.Errorf("schema create added the pending table without recording when (m:%s)", schema.QualifierPendingSince)
		return nil
	})
}
