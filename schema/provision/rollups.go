package provision

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// The resolution list (schema.TableOptions.Rollups) of a store.
//
// Unlike the settings, it may change between runs: the meta row's cell
// m:rollups (schema.QualifierRollups) records the list the store has, and
// every Open or Create with a configured list reconciles the two
// (reconcileRollups):
//
//   - a resolution added gets its table (EnsureTable, unless auto-create is
//     off: then the table must exist);
//   - a resolution removed is no longer written; its table is kept, with its
//     data, until an operator drops it (the log line says how);
//   - a resolution whose retention changed is an error: the retention is the
//     table's TTL, set when the table was created, and kv cannot change it
//     (gohbase has no ModifyTable). The error gives the HBase shell commands
//     that change the TTL and record the new list; once the cell holds the
//     configured retention, Open accepts it.
//
// Invariants:
//
//   - The cell changes only by check-and-put on the exact value read (absent
//     included), with a timestamp above the old cell's, so no process records
//     its list over one it has not compared with: two processes racing to
//     record different retentions of a resolution cannot both succeed, and of
//     racing processes with the same list, all succeed.
//   - A rollup table is created only after the cell records its resolution
//     with the retention it is created with (cell first, tables second). A
//     crash in between leaves a recorded resolution without its table, which
//     the next Open creates (or, without auto-create, reports).
//   - Create writes the cell after the settings (a complete meta row means the
//     base tables exist; the rollup tables are the cell's).

// Option is an optional setting of Open and Create.
type Option func(*config)

type config struct {
	logger *slog.Logger
	// hbasePrefix is the HBase table prefix; hbase is false on the embedded
	// store, whose tables no shell can alter or drop.
	hbasePrefix string
	hbase       bool
}

// WithLogger sets the logger of the resolution list's changes: a line per
// rollup table created (Info), per resolution removed and per existing table
// whose TTL cannot be checked (Warn) [slog.Default()].
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithHBaseTablePrefix says that the store is HBase with this table prefix, so
// that messages give the HBase shell commands (alter, disable, drop) with the
// tables' full names. Without it messages are for the embedded store.
func WithHBaseTablePrefix(prefix string) Option {
	return func(c *config) { c.hbasePrefix, c.hbase = prefix, true }
}

func newConfig(options []Option) config {
	var c config
	for _, o := range options {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}

// table is the full name of a table in the HBase shell.
func (c config) table(name string) string { return "'" + c.hbasePrefix + name + "'" }

// maxRollupAttempts bounds the check-and-put rounds of one reconcile: each lost
// round means another process recorded a list in between.
const maxRollupAttempts = 10

// recordedRollups is the m:rollups cell as read.
type recordedRollups struct {
	present bool
	value   []byte // as stored: what the check-and-put expects
	ts      int64
	rollups []schema.Rollup
}

// ReadRollups returns the resolution list the store records (m:rollups) and
// whether it records one: a store created before the list was recorded has
// none. A value that does not parse or validate is an error wrapping
// schema.ErrMalformed; a store without the meta table, one wrapping
// schema.ErrNotCreated.
func ReadRollups(ctx context.Context, st kv.Store) ([]schema.Rollup, bool, error) {
	rec, err := readRollups(ctx, st)
	return rec.rollups, rec.present, err
}

func readRollups(ctx context.Context, st kv.Store) (recordedRollups, error) {
	var rec recordedRollups
	r, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow), kv.Families(schema.FamilyMeta))
	if errors.Is(err, kv.ErrTableNotFound) {
		return rec, fmt.Errorf("schema: the store has no schema (no table %s): run `tsdb schema create`, or enable schema auto-create: %w",
			schema.TableMeta, schema.ErrNotCreated)
	}
	if err != nil {
		return rec, fmt.Errorf("schema: read the meta row: %w", err)
	}
	for _, c := range r.Cells {
		if c.Family == schema.FamilyMeta && string(c.Qualifier) == schema.QualifierRollups {
			rec.present, rec.value, rec.ts = true, c.Value, c.Timestamp
			break // the newest
		}
	}
	if !rec.present {
		return rec, nil
	}
	rs, err := schema.ParseRollups(string(rec.value))
	if err == nil {
		err = schema.ValidateRollups(rs, 0)
	}
	if err != nil {
		return rec, fmt.Errorf("schema: meta row %s:%s = %q: %w: %w", schema.FamilyMeta, schema.QualifierRollups, rec.value, err, schema.ErrMalformed)
	}
	rec.rollups = rs
	return rec, nil
}

// RollupChanges is how a configured resolution list differs from the recorded
// one.
type RollupChanges struct {
	// Added and Removed are the resolutions of one list only.
	Added, Removed []schema.Rollup
	// Changed are the resolutions of both whose retention differs, with the
	// configured retention; Recorded are the same with the recorded one.
	Changed, Recorded []schema.Rollup
}

// CompareRollups compares the configured list with the recorded one (both
// ascending, as ParseRollups returns them).
func CompareRollups(recorded, configured []schema.Rollup) RollupChanges {
	var ch RollupChanges
	for _, c := range configured {
		i := slices.IndexFunc(recorded, func(r schema.Rollup) bool { return r.Resolution == c.Resolution })
		switch {
		case i < 0:
			ch.Added = append(ch.Added, c)
		case recorded[i].Retention != c.Retention:
			ch.Changed, ch.Recorded = append(ch.Changed, c), append(ch.Recorded, recorded[i])
		}
	}
	for _, r := range recorded {
		if !slices.ContainsFunc(configured, func(c schema.Rollup) bool { return c.Resolution == r.Resolution }) {
			ch.Removed = append(ch.Removed, r)
		}
	}
	return ch
}

// ChangedRetentionError is the error CompareRollups' changes make for the
// operator: it wraps schema.ErrMismatch and names, per changed resolution, both
// retentions, the flag value that keeps the store's, and on HBase the shell
// commands that change the table's TTL and record the new list. nil when no
// retention changed.
func ChangedRetentionError(ch RollupChanges, configured []schema.Rollup, options ...Option) error {
	if len(ch.Changed) == 0 {
		return nil
	}
	c := newConfig(options)
	keep := slices.Clone(configured)
	for i, r := range keep {
		if j := slices.IndexFunc(ch.Recorded, func(x schema.Rollup) bool { return x.Resolution == r.Resolution }); j >= 0 {
			keep[i].Retention = ch.Recorded[j].Retention
		}
	}
	var msgs []string
	for i, want := range ch.Changed {
		rec := ch.Recorded[i]
		table := schema.RollupTable(want.Resolution)
		msg := fmt.Sprintf("schema: rollup %s: the store keeps it %s, this process is configured to keep it %s; the retention is the TTL of table %s, "+
			"set when the table was created, and tsdb cannot change it: start with --rollups=%s",
			shortDuration(want.Resolution), keepText(rec.Retention), keepText(want.Retention), table, schema.FormatRollups(keep))
		if c.hbase {
			ttl := "'FOREVER'"
			if want.Retention > 0 {
				ttl = fmt.Sprint(int64(want.Retention / time.Second))
			}
			msg += fmt.Sprintf(", or change the TTL in the HBase shell with alter %s, NAME => '%s', TTL => %s "+
				"and then record the new list with put %s, '%s', '%s:%s', '%s'",
				c.table(table), schema.FamilyRollup, ttl, c.table(schema.TableMeta), schema.MetaSchemaRow, schema.FamilyMeta,
				schema.QualifierRollups, schema.FormatRollups(configured))
		} else {
			msg += " (an embedded store's table TTL cannot be changed)"
		}
		msgs = append(msgs, msg)
	}
	return mismatchError(strings.Join(msgs, "; "))
}

// mismatchError is a rollup retention mismatch; its message is complete in itself.
type mismatchError string

func (e mismatchError) Error() string { return string(e) }
func (e mismatchError) Unwrap() error { return schema.ErrMismatch }

// retentionText writes a retention for messages: 90d, or "forever" for 0.
func retentionText(d time.Duration) string {
	if d == 0 {
		return "forever"
	}
	return shortDuration(d)
}

// keepText is how long a retention keeps data: "for 90d", or "forever" for 0.
func keepText(d time.Duration) string {
	if d == 0 {
		return "forever"
	}
	return "for " + shortDuration(d)
}

// shortDuration writes d as --rollups does (Prometheus' duration syntax): 5m,
// 90d, 5y.
func shortDuration(d time.Duration) string {
	// A one-resolution list of d kept forever is "<d>:0".
	return strings.TrimSuffix(schema.FormatRollups([]schema.Rollup{{Resolution: d}}), ":0")
}

// reconcileRollups records opts.Rollups in the meta row and makes the tables
// of its resolutions (see the comment at the top of this file). With
// autoCreate false it creates nothing: a missing table of a configured
// resolution is an error.
func reconcileRollups(ctx context.Context, st kv.Store, opts schema.TableOptions, autoCreate bool, c config) error {
	want := opts.Rollups
	specs := schema.Tables(opts)
	specs = specs[len(specs)-len(want):] // the rollup tables, in the order of want
	text := schema.FormatRollups(want)
	for attempt := 1; ; attempt++ {
		rec, err := readRollups(ctx, st)
		if err != nil {
			return err
		}
		ch := RollupChanges{Added: want}
		if rec.present {
			ch = CompareRollups(rec.rollups, want)
		}
		if err := ChangedRetentionError(ch, want, func(x *config) { *x = c }); err != nil {
			return err
		}
		// The tables before this process records anything: a table of a resolution
		// added that exists already was not made for this list (kept when its
		// resolution was removed, or made by hand), and its TTL cannot be read.
		var existing []string
		if !autoCreate || !rec.present || len(ch.Added) > 0 {
			if existing, err = st.ListTables(ctx); err != nil {
				return fmt.Errorf("schema: list the tables: %w", err)
			}
		}
		if !autoCreate {
			for _, s := range specs {
				if !slices.Contains(existing, s.Name) {
					return fmt.Errorf("schema: rollup table %s of --rollups=%s does not exist: run `tsdb schema create` with the same --rollups, "+
						"or enable schema auto-create: %w", s.Name, text, schema.ErrNotCreated)
				}
			}
		}
		if !rec.present || string(rec.value) != text {
			ts := max(time.Now().UnixMilli(), rec.ts+1)
			put := kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta, []byte(schema.QualifierRollups), ts, []byte(text))
			ok, err := st.CheckAndPut(ctx, schema.TableMeta, rec.value, put)
			if err != nil {
				return fmt.Errorf("schema: record the rollups %s in the meta row: %w", text, err)
			}
			if !ok {
				if attempt >= maxRollupAttempts {
					return fmt.Errorf("schema: record the rollups %s in the meta row: the cell changed under %d attempts: %w", text, attempt, kv.ErrUnavailable)
				}
				continue // another process recorded a list: compare with it
			}
			c.logRecorded(rec, text, ch, existing)
			c.logIndexTTL(ctx, st, rec, opts)
		}
		for _, s := range specs {
			ret := s.Families[0].TTL
			if autoCreate {
				created, err := st.EnsureTable(ctx, s)
				if err != nil {
					return fmt.Errorf("schema: create rollup table %s: %w", s.Name, err)
				}
				if created {
					c.logger.Info("rollup table created", "table", s.Name, "retention", retentionText(ret))
					continue
				}
			}
			if slices.Contains(existing, s.Name) &&
				slices.ContainsFunc(ch.Added, func(r schema.Rollup) bool { return schema.RollupTable(r.Resolution) == s.Name }) {
				args := []any{"table", s.Name, "retention", retentionText(ret)}
				if c.hbase {
					args = append(args, "check_with", "describe "+c.table(s.Name))
				}
				c.logger.Warn("rollup resolution added, but its table already exists: it keeps the TTL it was created with, "+
					"which may not be the retention configured", args...)
			}
		}
		return nil
	}
}

// logRecorded logs what recording the list changed: the list, each resolution
// removed (its table is kept), and a table of the rollup layout before
// resolution lists (one table "rollup") that nothing uses.
func (c config) logRecorded(rec recordedRollups, text string, ch RollupChanges, existing []string) {
	if rec.present {
		c.logger.Info("rollup resolutions changed", "from", string(rec.value), "to", text)
	} else {
		c.logger.Info("rollup resolutions recorded", "rollups", text)
	}
	for _, r := range ch.Removed {
		table := schema.RollupTable(r.Resolution)
		args := []any{"resolution", shortDuration(r.Resolution), "table", table}
		if c.hbase {
			args = append(args, "drop_with", "disable "+c.table(table)+"; drop "+c.table(table))
		}
		c.logger.Warn("rollup resolution removed: its table is kept with its data and no longer written", args...)
	}
	if slices.Contains(existing, legacyRollupTable) {
		args := []any{"table", legacyRollupTable}
		if c.hbase {
			args = append(args, "drop_with", "disable "+c.table(legacyRollupTable)+"; drop "+c.table(legacyRollupTable))
		}
		c.logger.Warn("table of an earlier layout (families m5 and h1, never written): nothing uses it", args...)
	}
}

// legacyRollupTable is the one rollup table of the layout before resolution
// lists; it was created but never written.
const legacyRollupTable = "rollup"

// logIndexTTL warns when the list just recorded keeps data longer than the tag
// index does: the index's TTL follows the longest retention
// (TableOptions.IndexRetention) but, like every TTL, was fixed when the index
// was created, from the list recorded then (assuming the same raw retention).
func (c config) logIndexTTL(ctx context.Context, st kv.Store, rec recordedRollups, opts schema.TableOptions) {
	had, recorded, err := readRetention(ctx, st, schema.QualifierIndexTTL)
	if err != nil {
		c.logger.Warn("cannot read the tag index's recorded TTL", "err", err)
		return
	}
	if !recorded {
		// A store made before the TTL was recorded: the previous list's is
		// the best guess.
		if !rec.present {
			return
		}
		before := opts
		before.Rollups = rec.rollups
		had = before.IndexRetention()
	}
	need := opts.IndexRetention()
	if had == 0 || need != 0 && need <= had {
		return
	}
	args := []any{"table", schema.TableIndex, "ttl", retentionText(had), "needed", retentionText(need)}
	if !recorded {
		args = append(args, "ttl_from", "the previous resolution list (the store does not record the index's TTL)")
	}
	if c.hbase {
		ttl := "'FOREVER'"
		if need > 0 {
			ttl = fmt.Sprint(int64(need / time.Second))
		}
		args = append(args, "alter_with", fmt.Sprintf("alter %s, NAME => '%s', TTL => %s; put %s, '%s', '%s:%s', '%s'",
			c.table(schema.TableIndex), schema.FamilyPostings, ttl,
			c.table(schema.TableMeta), schema.MetaSchemaRow, schema.FamilyMeta, schema.QualifierIndexTTL, formatRetention(need)))
	}
	c.logger.Warn("the tag index expires before the rollups now kept: a series whose raw data and index entries expired is not found in them", args...)
}
