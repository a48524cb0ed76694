package provision

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// The pending table (schema/pending.go): the rows compaction has yet to fold
// in. A store created before it has none: Open creates it (with auto-create;
// without, it is an error that says to run `tsdb schema create`, which creates
// it), and so does Create. Its TTL is the raw retention, which the meta row
// already records (retention.go), so nothing more is recorded for it.
//
// A store that had no pending table was written by writers that marked no
// row: before it creates the table, Open records when in the meta row
// (schema.QualifierPendingSince, check-and-put, so the first process to add
// the table decides), and compaction sweeps each salt for the raw cells
// written before then (compact/doc.go). A crash between the two leaves
// the moment recorded and the table missing, which the next Open creates;
// never the other way round.

// MissingPendingTableError is the error for a store without the pending table
// (created before it) opened without auto-create: it wraps
// schema.ErrNotCreated and says what to run.
func MissingPendingTableError() error {
	return fmt.Errorf("schema: the store has no pending table %s (it was created before compaction kept one): "+
		"run `tsdb schema create` with the same flags to add it, or enable schema auto-create: %w", schema.TablePending, schema.ErrNotCreated)
}

// reconcilePending makes sure the pending table exists, creating it when
// autoCreate is set.
func reconcilePending(ctx context.Context, st kv.Store, opts schema.TableOptions, autoCreate bool, c config) error {
	tables, err := st.ListTables(ctx)
	if err != nil {
		return fmt.Errorf("schema: list the tables: %w", err)
	}
	if slices.Contains(tables, schema.TablePending) {
		return nil
	}
	if !autoCreate {
		return MissingPendingTableError()
	}
	if err := recordPendingSince(ctx, st); err != nil {
		return err
	}
	created, err := st.EnsureTable(ctx, schema.PendingTable(opts))
	if err != nil {
		return fmt.Errorf("schema: create table %s: %w", schema.TablePending, err)
	}
	if created {
		c.logger.Info("pending table created; compaction sweeps each salt once for the raw cells written before it", "table", schema.TablePending)
	}
	return nil
}

// recordPendingSince records now as the moment the pending table is added to
// a store that holds data, unless a moment is recorded already.
func recordPendingSince(ctx context.Context, st kv.Store) error {
	now := time.Now().UnixMilli()
	if _, err := st.CheckAndPut(ctx, schema.TableMeta, nil, kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta,
		[]byte(schema.QualifierPendingSince), now, []byte(strconv.FormatInt(now, 10)))); err != nil {
		return fmt.Errorf("schema: record when the pending table was added: %w", err)
	}
	return nil
}
