package provision_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// TestRawRetention: a store records the raw retention it was created with; a
// process configured with another is refused at start, naming both values and
// what to do (on HBase the alter and put commands), instead of acknowledging
// samples the store then hides; a store that recorded none gets the configured
// one with a warning.
func TestRawRetention(t *testing.T) {
	ctx := context.Background()
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			b.TableOptions.RawRetention = time.Minute
			st := b.Store(t) // created with --retention.raw=1m
			if d, ok, err := provision.ReadRawRetention(ctx, st); err != nil || !ok || d != time.Minute {
				t.Fatalf("ReadRawRetention = %s, %v, %v; want 1m", d, ok, err)
			}
			opts := b.TableOptions
			if _, err := provision.Open(ctx, st, b.Settings, opts, false); err != nil {
				t.Fatalf("Open with the same retention: %v", err)
			}
			opts.RawRetention = 30 * 24 * time.Hour
			var options []provision.Option
			if b.Name == "hbase" {
				options = append(options, provision.WithHBaseTablePrefix("tsdb-"))
			}
			_, err := provision.Open(ctx, st, b.Settings, opts, true, options...)
			want := "schema: the store keeps raw data for 1m, this process is configured to keep it for 30d (--retention.raw=30d); " +
				"the retention is the TTL of the data table, set when it was created, and tsdb cannot change it: start with --retention.raw=1m"
			if b.Name == "hbase" {
				want += ", or change the TTLs in the HBase shell with alter 'tsdb-data', {NAME => 'r', TTL => 2592000}, {NAME => 'c', TTL => 2592000}, " +
					"{NAME => 't', TTL => 2592000} and alter 'tsdb-index', NAME => 'p', TTL => 157766400, then record it with put 'tsdb-meta', 'schema', 'm:raw_retention', '30d'"
			} else {
				want += " (an embedded store's table TTL cannot be changed)"
			}
			if !errors.Is(err, schema.ErrMismatch) || err.Error() != want {
				t.Errorf("Open with 30d on a 1m store:\n%v\nwant\n%s", err, want)
			}
			// Create on the existing store refuses the same way.
			if err := provision.Create(ctx, st, b.Settings, opts); !errors.Is(err, schema.ErrMismatch) {
				t.Errorf("Create with 30d on a 1m store: %v", err)
			}

			// A store that recorded none (created before it was recorded) gets the
			// configured retention.
			row, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range row.Cells {
				if string(c.Qualifier) == schema.QualifierRawRetention {
					if err := st.Apply(ctx, schema.TableMeta, []kv.Mutation{
						kv.DeleteColumn([]byte(schema.MetaSchemaRow), schema.FamilyMeta, c.Qualifier, c.Timestamp)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, ok, err := provision.ReadRawRetention(ctx, st); err != nil || ok {
				t.Fatalf("ReadRawRetention after the delete = %v, %v", ok, err)
			}
			// On HBase, a put must be newer than the delete marker to show.
			time.Sleep(2 * time.Millisecond)
			if _, err := provision.Open(ctx, st, b.Settings, opts, false); err != nil {
				t.Fatalf("Open on a store that records no retention: %v", err)
			}
			if d, ok, err := provision.ReadRawRetention(ctx, st); err != nil || !ok || d != 30*24*time.Hour {
				t.Errorf("ReadRawRetention after Open = %s, %v, %v; want 30d", d, ok, err)
			}
		})
	}
}
