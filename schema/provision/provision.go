// Package provision creates, checks and opens a store's schema: the tables of
// schema.Tables and the schema meta row that records the settings the store was
// created with. It is the one part of the layout that does I/O (through a
// kv.Store), kept apart from package schema so that schema stays pure codecs.
// It imports only schema and kv.
package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Creating and checking the schema meta row.
//
// Invariants:
//
//   - The meta row is written only after every base table of schema.Tables (data,
//     series, index, meta) exists, so a complete meta row means the schema was
//     created. The rollup tables follow the meta row's resolution list, which
//     Create records after the settings (rollups.go).
//   - The settings of a store are decided by one atomic step: the check-and-put of
//     the claim cell (expected absent). Whoever wins it fixes the settings; every
//     other creator reads the claim and compares. The four readable cells are then
//     written, by any creator, from the claim, in one Apply (one row, so atomic on
//     both backends): they are complete or absent, and always equal the claim.
//   - format_version present means the row is complete. A claim without the four
//     cells is a creation that was interrupted (or is in progress); Check reports it
//     as not created, and Create completes it from the claim, never from its own
//     settings, so the stored settings are always exactly one creator's.

// Create creates the base tables of the schema (data, series, index, meta,
// exemplars; EnsureTable, existing tables are left as they are), then the schema meta row
// with settings want, records the raw and exemplar retentions (retention.go,
// exemplars.go), then records opts.Rollups and creates their tables (see
// rollups.go). opts.Salts of 0 means want.Salts; any other value must
// equal it. Create is idempotent and safe against concurrent creators: if the
// store already has (or another process concurrently claims) other settings, it
// returns an error wrapping schema.ErrMismatch that names both values, and
// touches no rollup table; so does a changed retention of a recorded resolution.
func Create(ctx context.Context, st kv.Store, want schema.Settings, opts schema.TableOptions, options ...Option) error {
	opts, err := checkOptions(want, opts)
	if err != nil {
		if errors.Is(err, errRollupsForBucket) {
			// A store created with another bucket width: that is what to say.
			if _, cerr := Check(ctx, st, want); errors.Is(cerr, schema.ErrMismatch) || errors.Is(cerr, schema.ErrUnsupportedFormat) {
				return cerr
			}
		}
		return err
	}
	_, readErr := Read(ctx, st)
	existed := readErr == nil
	tables, err := st.ListTables(ctx)
	if err != nil {
		return fmt.Errorf("schema: list the tables: %w", err)
	}
	// createSettings makes the exemplar and pending tables of a store made
	// before them; for the pending table, the moment is recorded first.
	hadExemplars := slices.Contains(tables, schema.TableExemplars)
	if existed && !slices.Contains(tables, schema.TablePending) {
		if err := recordPendingSince(ctx, st); err != nil {
			return err
		}
	}
	if err := createSettings(ctx, st, want, opts); err != nil {
		return err
	}
	c := newConfig(options)
	if err := reconcileRawRetention(ctx, st, opts, !existed, c); err != nil {
		return err
	}
	if err := reconcileExemplars(ctx, st, opts, true, !existed || !hadExemplars, c); err != nil {
		return err
	}
	return reconcileRollups(ctx, st, opts, true, c)
}

// checkOptions validates want and opts for each other, and returns opts with
// Salts filled in.
func checkOptions(want schema.Settings, opts schema.TableOptions) (schema.TableOptions, error) {
	if err := want.Validate(); err != nil {
		return opts, err
	}
	if opts.Salts == 0 {
		opts.Salts = want.Salts
	}
	if opts.Salts != want.Salts {
		return opts, fmt.Errorf("schema: table options for %d salts, settings for %d: %w", opts.Salts, want.Salts, kv.ErrInvalidArgument)
	}
	if err := opts.Validate(); err != nil {
		return opts, err
	}
	if err := schema.ValidateRollups(opts.Rollups, want.BucketWidth); err != nil {
		return opts, rollupsForBucketError{err}
	}
	return opts, nil
}

// errRollupsForBucket marks a resolution list that does not fit the bucket width.
var errRollupsForBucket = errors.New("rollups do not fit the bucket width")

// rollupsForBucketError is a resolution list that does not fit the bucket width
// of the settings; it wraps kv.ErrInvalidArgument.
type rollupsForBucketError struct{ err error }

func (e rollupsForBucketError) Error() string {
	return e.err.Error() + ": " + kv.ErrInvalidArgument.Error()
}
func (e rollupsForBucketError) Unwrap() []error {
	return []error{e.err, kv.ErrInvalidArgument, errRollupsForBucket}
}

// createSettings is Create without the rollups: base tables and settings.
func createSettings(ctx context.Context, st kv.Store, want schema.Settings, opts schema.TableOptions) error {
	specs := schema.Tables(opts)
	indexCreated := false
	for _, spec := range specs[:len(specs)-len(opts.Rollups)] {
		created, err := st.EnsureTable(ctx, spec)
		if err != nil {
			return fmt.Errorf("schema: create table %s: %w", spec.Name, err)
		}
		indexCreated = indexCreated || created && spec.Name == schema.TableIndex
	}
	if indexCreated {
		// Its TTL, which kv cannot read back: logIndexTTL compares with it.
		if _, err := recordRetention(ctx, st, schema.QualifierIndexTTL, formatRetention(opts.IndexRetention())); err != nil {
			return fmt.Errorf("schema: record the tag index's TTL: %w", err)
		}
	}

	row := []byte(schema.MetaSchemaRow)
	m, err := readMetaRow(ctx, st)
	if err != nil {
		return err
	}
	if m.complete {
		return schema.CompareSettings(m.settings, want)
	}

	if !m.hasClaim {
		won, err := st.CheckAndPut(ctx, schema.TableMeta, nil,
			kv.Put(row, schema.FamilyMeta, []byte(schema.QualifierSchemaClaim), time.Now().UnixMilli(), []byte(want.String())))
		if err != nil {
			return fmt.Errorf("schema: claim the meta row: %w", err)
		}
		if won {
			m.hasClaim, m.claim = true, want
		} else {
			// Another creator won: its claim decides.
			if m, err = readMetaRow(ctx, st); err != nil {
				return err
			}
			if m.complete {
				return schema.CompareSettings(m.settings, want)
			}
			if !m.hasClaim {
				return fmt.Errorf("schema: lost the race to claim the meta row, but it has no claim: %w", kv.ErrUnavailable)
			}
		}
	}
	if m.claimErr != nil {
		return m.claimErr
	}
	claimed := m.claim

	// Write (or rewrite, identically) the readable cells from the claim.
	now := time.Now().UnixMilli()
	cells := schema.SettingsCells(claimed)
	muts := make([]kv.Mutation, len(cells))
	for i, c := range cells {
		muts[i] = kv.Put(row, schema.FamilyMeta, c.Qualifier, now, c.Value)
	}
	if err := st.Apply(ctx, schema.TableMeta, muts); err != nil {
		return fmt.Errorf("schema: write the meta row: %w", err)
	}
	return schema.CompareSettings(claimed, want)
}

// Read returns the settings the store was created with. A store without the meta
// table or a complete meta row yields an error wrapping schema.ErrNotCreated; a store of a
// newer format, one wrapping schema.ErrUnsupportedFormat.
func Read(ctx context.Context, st kv.Store) (schema.Settings, error) {
	m, err := readMetaRow(ctx, st)
	switch {
	case err != nil:
		return schema.Settings{}, err
	case m.complete:
		return m.settings, nil
	case m.hasClaim:
		return schema.Settings{}, fmt.Errorf("schema: the store's creation was interrupted (meta row %s has a claim for %q but no settings): "+
			"run `tsdb schema create` to complete it, or enable schema auto-create: %w", schema.MetaSchemaRow, m.claimText, schema.ErrNotCreated)
	default:
		return schema.Settings{}, fmt.Errorf("schema: the store has no schema (no meta row %s in table %s): "+
			"run `tsdb schema create`, or enable schema auto-create: %w", schema.MetaSchemaRow, schema.TableMeta, schema.ErrNotCreated)
	}
}

// Check reads the store's settings and compares them with want. It returns the
// store's settings (when they could be read) and an error wrapping schema.ErrNotCreated,
// schema.ErrUnsupportedFormat or schema.ErrMismatch when the store cannot be used with want. It does
// not check that the other tables exist: Create makes them before the meta row.
func Check(ctx context.Context, st kv.Store, want schema.Settings) (schema.Settings, error) {
	if err := want.Validate(); err != nil {
		return schema.Settings{}, err
	}
	got, err := Read(ctx, st)
	if err != nil {
		return got, err
	}
	return got, schema.CompareSettings(got, want)
}

// Open prepares a store for use with settings want, the raw retention
// opts.RawRetention and the resolution list opts.Rollups: it checks the meta
// row, refuses a raw retention other than the one recorded (retention.go),
// creates a missing exemplar table (unless autoCreate is off: then it is an
// error) and refuses an exemplar retention other than the one recorded
// (exemplars.go), creates a missing pending table likewise (pending.go), and if
// the schema was not created and
// autoCreate is set, creates it with want and opts (see Create). On a store
// that exists, it records the resolution list and creates the tables of the
// resolutions added (unless autoCreate is off: then they must exist), and
// refuses a changed retention (rollups.go). It returns the store's settings,
// which equal want on success.
func Open(ctx context.Context, st kv.Store, want schema.Settings, opts schema.TableOptions, autoCreate bool, options ...Option) (schema.Settings, error) {
	got, err := Check(ctx, st, want)
	switch {
	case err == nil:
		if opts, err = checkOptions(want, opts); err != nil {
			return got, err
		}
		c := newConfig(options)
		if err := reconcileRawRetention(ctx, st, opts, false, c); err != nil {
			return got, err
		}
		if err := reconcileExemplars(ctx, st, opts, autoCreate, false, c); err != nil {
			return got, err
		}
		if err := reconcilePending(ctx, st, opts, autoCreate, c); err != nil {
			return got, err
		}
		return got, reconcileRollups(ctx, st, opts, autoCreate, c)
	case !autoCreate || !errors.Is(err, schema.ErrNotCreated):
		return got, err
	}
	if err := Create(ctx, st, want, opts, options...); err != nil {
		return schema.Settings{}, err
	}
	return Check(ctx, st, want)
}

// metaRow is what readMetaRow found.
type metaRow struct {
	complete bool // format_version present; settings decoded
	settings schema.Settings
	hasClaim bool // claim cell present
	claim    schema.Settings
	claimErr error // the claim did not parse
	// claimText is the claim as stored, for messages.
	claimText string
}

// readMetaRow reads the schema meta row. A missing meta table is schema.ErrNotCreated, an
// unreadable complete row an error (schema.ErrMalformed or schema.ErrUnsupportedFormat).
func readMetaRow(ctx context.Context, st kv.Store) (metaRow, error) {
	var m metaRow
	r, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow), kv.Families(schema.FamilyMeta))
	if errors.Is(err, kv.ErrTableNotFound) {
		return m, fmt.Errorf("schema: the store has no schema (no table %s): run `tsdb schema create`, or enable schema auto-create: %w",
			schema.TableMeta, schema.ErrNotCreated)
	}
	if err != nil {
		return m, fmt.Errorf("schema: read the meta row: %w", err)
	}
	for _, c := range r.Cells {
		if c.Family != schema.FamilyMeta {
			continue
		}
		switch string(c.Qualifier) {
		case schema.QualifierFormatVersion:
			m.complete = true
		case schema.QualifierSchemaClaim:
			if !m.hasClaim {
				m.hasClaim, m.claimText = true, string(c.Value)
			}
		}
	}
	if m.hasClaim {
		m.claim, m.claimErr = schema.ParseSettings(m.claimText)
		if m.claimErr != nil {
			m.claimErr = fmt.Errorf("schema: meta row claim: %w", m.claimErr)
		}
	}
	if m.complete {
		if m.settings, err = schema.DecodeSettings(r.Cells); err != nil {
			return m, err
		}
	}
	return m, nil
}
