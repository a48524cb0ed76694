package provision

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// The raw retention: the TTL of the data table's families (and, a day longer
// than the longest retention, the tag index's), fixed when the tables are
// created — gohbase cannot alter a table and the embedded store keeps the TTL
// it was created with. A process configured with another retention would
// acknowledge samples the store hides at once (older than the TTL in force) or
// reject samples the store would keep; so the meta row records the retention
// (m:raw_retention) and a process whose --retention.raw differs is refused at
// start with both values and what to do.

// ReadRawRetention returns the raw retention the store records and whether it
// records one (a store created before it was recorded has none).
func ReadRawRetention(ctx context.Context, st kv.Store) (time.Duration, bool, error) {
	return readRetention(ctx, st, schema.QualifierRawRetention)
}

// readRetention returns the retention the meta row records in qualifier and
// whether it records one.
func readRetention(ctx context.Context, st kv.Store, qualifier string) (time.Duration, bool, error) {
	r, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow), kv.Families(schema.FamilyMeta))
	if errors.Is(err, kv.ErrTableNotFound) {
		return 0, false, fmt.Errorf("schema: the store has no schema (no table %s): %w", schema.TableMeta, schema.ErrNotCreated)
	}
	if err != nil {
		return 0, false, fmt.Errorf("schema: read the meta row: %w", err)
	}
	for _, c := range r.Cells {
		if c.Family == schema.FamilyMeta && string(c.Qualifier) == qualifier {
			d, err := parseRetention(string(c.Value))
			if err != nil {
				return 0, false, fmt.Errorf("schema: meta row %s:%s %q: %w: %w", schema.FamilyMeta, qualifier, c.Value, err, schema.ErrMalformed)
			}
			return d, true, nil
		}
	}
	return 0, false, nil
}

// recordRetention writes value in the meta row's qualifier unless it holds one
// already (done false: another process recorded one first).
func recordRetention(ctx context.Context, st kv.Store, qualifier, value string) (done bool, err error) {
	return st.CheckAndPut(ctx, schema.TableMeta, nil,
		kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta, []byte(qualifier), time.Now().UnixMilli(), []byte(value)))
}

// formatRetention writes a retention as the meta cell holds it: "400d", "0".
func formatRetention(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return model.Duration(d).String()
}

func parseRetention(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := model.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("not a retention")
	}
	return time.Duration(d), nil
}

// RawRetentionError is the error for a store that keeps raw data recorded but
// a process configured with want: it wraps schema.ErrMismatch and says what to
// do. nil when they agree.
func RawRetentionError(recorded, want time.Duration, opts schema.TableOptions, options ...Option) error {
	if recorded == want {
		return nil
	}
	c := newConfig(options)
	msg := fmt.Sprintf("schema: the store keeps raw data %s, this process is configured to keep it %s (--retention.raw=%s); "+
		"the retention is the TTL of the data table, set when it was created, and tsdb cannot change it: start with --retention.raw=%s",
		keepText(recorded), keepText(want), formatRetention(want), formatRetention(recorded))
	if c.hbase {
		ttl := func(d time.Duration) string {
			if d == 0 {
				return "'FOREVER'"
			}
			return fmt.Sprint(int64(d / time.Second))
		}
		opts.RawRetention = want
		msg += fmt.Sprintf(", or change the TTLs in the HBase shell with alter %s, {NAME => '%s', TTL => %s}, {NAME => '%s', TTL => %s}, {NAME => '%s', TTL => %s} "+
			"and alter %s, NAME => '%s', TTL => %s, then record it with put %s, '%s', '%s:%s', '%s'",
			c.table(schema.TableData), schema.FamilyRaw, ttl(want), schema.FamilyChunk, ttl(want), schema.FamilyTags, ttl(want),
			c.table(schema.TableIndex), schema.FamilyPostings, ttl(opts.IndexRetention()),
			c.table(schema.TableMeta), schema.MetaSchemaRow, schema.FamilyMeta, schema.QualifierRawRetention, formatRetention(want))
	} else {
		msg += " (an embedded store's table TTL cannot be changed)"
	}
	return mismatchError(msg)
}

// reconcileRawRetention records opts.RawRetention in a store that records
// none (created says whether this process just created the tables: then it is
// their TTL; otherwise it is what the operator says it is, and a warning says
// so), and refuses one that records another.
func reconcileRawRetention(ctx context.Context, st kv.Store, opts schema.TableOptions, created bool, c config) error {
	for range maxRollupAttempts {
		rec, ok, err := ReadRawRetention(ctx, st)
		if err != nil {
			return err
		}
		if ok {
			return RawRetentionError(rec, opts.RawRetention, opts, func(x *config) { *x = c })
		}
		value := formatRetention(opts.RawRetention)
		done, err := recordRetention(ctx, st, schema.QualifierRawRetention, value)
		if err != nil {
			return fmt.Errorf("schema: record the raw retention: %w", err)
		}
		if done {
			if created {
				c.logger.Info("raw retention recorded", "retention", value)
			} else {
				c.logger.Warn("raw retention recorded from --retention.raw in a store that recorded none: if its tables were created with another TTL, "+
					"change one of them to match", "retention", value)
			}
			return nil
		}
	}
	return fmt.Errorf("schema: record the raw retention: %d attempts lost to other processes: %w", maxRollupAttempts, kv.ErrUnavailable)
}
