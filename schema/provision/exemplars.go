package provision

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// The exemplar table (schema/exemplar.go): one table whose family's TTL is the
// exemplar retention (schema.TableOptions.ExemplarRetention).
//
// A store created before exemplars were stored has no exemplar table: Open
// creates it (with auto-create; without, it is an error that says to run
// `tsdb schema create`, which creates it), and so does Create. Like the raw
// retention (retention.go), the exemplar retention is the table's TTL, fixed
// when the table is created, so the meta row records it (m:exemplar_retention)
// and a process configured with another one is refused with both values and
// what to do.
//
// Invariants:
//
//   - The retention is compared before the table is created: a store that
//     records another retention gets no table from this process.
//   - The cell is written by check-and-put (expected absent), after the table
//     exists: a recorded retention is the TTL of a table that was created with
//     it, unless the table was created by hand or by a version before the
//     cell, which the warning of reconcileExemplars says.

// ReadExemplarRetention returns the exemplar retention the store records and
// whether it records one (a store created before exemplars has none).
func ReadExemplarRetention(ctx context.Context, st kv.Store) (time.Duration, bool, error) {
	return readRetention(ctx, st, schema.QualifierExemplarRetention)
}

// ExemplarRetentionError is the error for a store that keeps exemplars
// recorded but a process configured with want: it wraps schema.ErrMismatch
// and says what to do. nil when they agree.
func ExemplarRetentionError(recorded, want time.Duration, options ...Option) error {
	if recorded == want {
		return nil
	}
	c := newConfig(options)
	msg := fmt.Sprintf("schema: the store keeps exemplars %s, this process is configured to keep them %s (--retention.exemplars=%s); "+
		"the retention is the TTL of table %s, set when it was created, and tsdb cannot change it: start with --retention.exemplars=%s",
		keepText(recorded), keepText(want), formatRetention(want), schema.TableExemplars, formatRetention(recorded))
	if c.hbase {
		ttl := "'FOREVER'"
		if want > 0 {
			ttl = fmt.Sprint(int64(want / time.Second))
		}
		msg += fmt.Sprintf(", or change the TTL in the HBase shell with alter %s, NAME => '%s', TTL => %s, then record it with put %s, '%s', '%s:%s', '%s'",
			c.table(schema.TableExemplars), schema.FamilyExemplars, ttl,
			c.table(schema.TableMeta), schema.MetaSchemaRow, schema.FamilyMeta, schema.QualifierExemplarRetention, formatRetention(want))
	} else {
		msg += " (an embedded store's table TTL cannot be changed)"
	}
	return mismatchError(msg)
}

// MissingExemplarTableError is the error for a store without the exemplar
// table (created before exemplars were stored) opened without auto-create: it
// wraps schema.ErrNotCreated and says what to run.
func MissingExemplarTableError() error {
	return fmt.Errorf("schema: the store has no exemplar table %s (it was created before exemplars were stored): "+
		"run `tsdb schema create` with the same flags to add it, or enable schema auto-create: %w", schema.TableExemplars, schema.ErrNotCreated)
}

// reconcileExemplars makes sure the exemplar table exists (creating it when
// autoCreate is set, with opts.ExemplarRetention as its TTL) and that the
// store records that retention (see the comment at the top of this file).
// created says whether this process created the store's tables just now.
func reconcileExemplars(ctx context.Context, st kv.Store, opts schema.TableOptions, autoCreate, created bool, c config) error {
	for range maxRollupAttempts {
		rec, ok, err := ReadExemplarRetention(ctx, st)
		if err != nil {
			return err
		}
		if ok {
			if err := ExemplarRetentionError(rec, opts.ExemplarRetention, func(x *config) { *x = c }); err != nil {
				return err
			}
		}
		tables, err := st.ListTables(ctx)
		if err != nil {
			return fmt.Errorf("schema: list the tables: %w", err)
		}
		tableCreated := false
		if !slices.Contains(tables, schema.TableExemplars) {
			if !autoCreate {
				return MissingExemplarTableError()
			}
			if tableCreated, err = st.EnsureTable(ctx, schema.ExemplarTable(opts)); err != nil {
				return fmt.Errorf("schema: create table %s: %w", schema.TableExemplars, err)
			}
			if tableCreated {
				c.logger.Info("exemplar table created", "table", schema.TableExemplars, "retention", retentionText(opts.ExemplarRetention))
			}
		}
		if ok {
			return nil
		}
		value := formatRetention(opts.ExemplarRetention)
		done, err := recordRetention(ctx, st, schema.QualifierExemplarRetention, value)
		if err != nil {
			return fmt.Errorf("schema: record the exemplar retention: %w", err)
		}
		if !done {
			continue // another process recorded one: compare with it
		}
		if created || tableCreated {
			c.logger.Info("exemplar retention recorded", "retention", value)
		} else {
			c.logger.Warn("exemplar retention recorded from --retention.exemplars for an exemplar table that existed: if it was created with another TTL, "+
				"change one of them to match", "retention", value)
		}
		return nil
	}
	return fmt.Errorf("schema: record the exemplar retention: %d attempts lost to other processes: %w", maxRollupAttempts, kv.ErrUnavailable)
}
