package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Removing the tag index entries of series-days a delete left without samples
// (Delete's last step), so that the series API, label values and the
// selection of a query's series no longer find them there:
//
//  1. the series-days of the delete's series and range that have postings
//     and no sample left (query.Reader.HasSamples over the whole UTC day)
//     are the candidates;
//  2. the index generation is raised (index.Postings.RaiseGeneration) and an
//     unindex row (schema/indexgen.go) is written per candidate with the
//     generation before, in the meta table: the record that makes a crash
//     from here on finishable;
//  3. unless the store is kv.Exclusive (one process, whose own caches the
//     raise already reset), the delete waits twice
//     index.PostingsOptions.GenerationRefresh, until every process writes
//     its postings under the new generation;
//  4. per unindex row: if the series-day has samples again (written
//     meanwhile), nothing is removed; otherwise its postings up to the
//     recorded generation are (index.Postings.Remove: column deletes, each
//     below every posting written under the new generation); then the row
//     is deleted.
//
// A delete finishes the unindex rows it finds (left by a delete that
// stopped in step 4) with its own. A series-day written by a process whose
// last read of the generation is older than step 3's wait (a write taking
// longer than twice GenerationRefresh across a delete of that very day) may
// lose its postings while its samples stay; its next write after that
// rewrites them.

// unindexWork is one series-day whose postings are to be removed, up to gen.
type unindexWork struct {
	day uint32
	ref query.SeriesRef
	gen int64
}

// emptyDays returns the series-days of refs on the UTC days of [mint, maxt]
// that have postings and no sample (dry: no sample outside [mint, maxt]).
func (db *DB) emptyDays(ctx context.Context, refs []query.SeriesRef, mint, maxt int64, dry bool) ([]unindexWork, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	var days []uint32
	for day, last := schema.Day(mint), schema.Day(maxt); ; day++ {
		next, ok, err := db.postings.NextDay(ctx, day, last)
		if err != nil {
			return nil, fmt.Errorf("unindex: %w", err)
		}
		if !ok {
			break
		}
		days = append(days, next)
		if day = next; day == last {
			break
		}
	}
	var out []unindexWork
	for _, ref := range refs {
		for _, day := range days {
			start, end := schema.DayStart(day), schema.DayStart(day+1)-1
			empty, err := db.noSamples(ctx, ref, start, end, mint, maxt, dry)
			if err != nil {
				return nil, fmt.Errorf("unindex: %w", err)
			}
			if !empty {
				continue
			}
			has, err := db.postings.Has(ctx, day, ref.ID, ref.Labels)
			if err != nil {
				return nil, fmt.Errorf("unindex: %w", err)
			}
			if has {
				out = append(out, unindexWork{day: day, ref: ref})
			}
		}
	}
	return out, nil
}

// noSamples reports whether ref has no sample in [start, end]; dry, none
// outside [mint, maxt] (what a delete of that range would leave).
func (db *DB) noSamples(ctx context.Context, ref query.SeriesRef, start, end, mint, maxt int64, dry bool) (bool, error) {
	spans := [][2]int64{{start, end}}
	if dry {
		spans = [][2]int64{{start, min(end, mint-1)}, {max(start, maxt+1), end}}
	}
	for _, s := range spans {
		if s[0] > s[1] {
			continue
		}
		has, err := db.reader.HasSamples(ctx, ref, s[0], s[1])
		if err != nil {
			return false, err
		}
		if has {
			return false, nil
		}
	}
	return true, nil
}

// unindex removes the postings of the series-days in work (steps 2 to 4 of
// the comment above), and those of the unindex rows earlier deletes left,
// and returns how many series-days lost their postings.
func (db *DB) unindex(ctx context.Context, work []unindexWork) (int, error) {
	left, err := db.unindexRows(ctx)
	if err != nil {
		return 0, err
	}
	if len(work) == 0 && len(left) == 0 {
		return 0, nil
	}
	if len(work) > 0 {
		gen, err := db.postings.RaiseGeneration(ctx)
		if err != nil {
			return 0, fmt.Errorf("unindex: %w", err)
		}
		muts := make([]kv.Mutation, len(work))
		for i := range work {
			work[i].gen = gen
			muts[i] = kv.Put(schema.UnindexRow(nil, work[i].day, work[i].ref.ID), schema.FamilyMeta,
				[]byte(schema.QualifierGeneration), db.now().UnixMilli(), schema.AppendIndexGeneration(nil, gen))
		}
		if err := kv.ApplyBatches(ctx, db.st, schema.TableMeta, muts, kv.ApplyOptions{}); err != nil {
			return 0, fmt.Errorf("unindex: record %d series-days: %w", len(work), err)
		}
	}
	if ex, ok := db.st.(kv.Exclusive); !ok || !ex.Exclusive() {
		wait := 2 * db.postings.GenerationRefresh()
		db.logger.Info("delete: waiting for every process to write the tag index under the new generation",
			"wait", wait, "series_days", len(work)+len(left))
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("unindex: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
	removed := 0
	for _, w := range mergeWork(left, work) {
		if w.ref.Labels.IsEmpty() {
			// No labels in the registry: no posting was ever written for it.
			if err := db.st.Apply(ctx, schema.TableMeta, []kv.Mutation{kv.DeleteRow(schema.UnindexRow(nil, w.day, w.ref.ID), kv.MaxTimestamp)}); err != nil {
				return removed, fmt.Errorf("unindex: %w", err)
			}
			continue
		}
		empty, err := db.noSamples(ctx, w.ref, schema.DayStart(w.day), schema.DayStart(w.day+1)-1, 0, 0, false)
		if err != nil {
			return removed, fmt.Errorf("unindex: %w", err)
		}
		if empty {
			if err := db.postings.Remove(ctx, w.day, w.ref.ID, w.ref.Labels, w.gen); err != nil {
				return removed, fmt.Errorf("unindex: %w", err)
			}
			removed++
		}
		del := kv.DeleteRow(schema.UnindexRow(nil, w.day, w.ref.ID), kv.MaxTimestamp)
		if err := db.st.Apply(ctx, schema.TableMeta, []kv.Mutation{del}); err != nil {
			return removed, fmt.Errorf("unindex: %w", err)
		}
	}
	return removed, nil
}

// unindexRows returns the series-days of the unindex rows in the meta table,
// with their series' labels and placements from the registry.
func (db *DB) unindexRows(ctx context.Context) ([]unindexWork, error) {
	prefix := []byte(schema.UnindexRowPrefix)
	sc := db.st.Scan(ctx, schema.TableMeta, prefix, kv.PrefixEnd(prefix), kv.Families(schema.FamilyMeta))
	defer sc.Close()
	var (
		out []unindexWork
		ids []uint64
	)
	for sc.Next() {
		row := sc.Row()
		day, id, err := schema.ParseUnindexRow(row.Key)
		if err != nil {
			return nil, fmt.Errorf("unindex: %w", err)
		}
		var v []byte
		for _, c := range row.Cells {
			if string(c.Qualifier) == schema.QualifierGeneration {
				v = c.Value
				break
			}
		}
		gen, err := schema.DecodeIndexGeneration(v)
		if err != nil || v == nil {
			return nil, fmt.Errorf("unindex: row of series %d on day %d: generation %x: %w", id, day, v, schema.ErrMalformed)
		}
		out = append(out, unindexWork{day: day, ref: query.SeriesRef{ID: id}, gen: gen})
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("unindex: read the unindex rows: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	lbls, err := db.registry.Labels(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("unindex: labels of %d series: %w", len(ids), err)
	}
	for i := range out {
		out[i].ref.Labels = lbls[i]
		out[i].ref.Placement = db.settings.PlacementOf(lbls[i])
	}
	return out, nil
}

// mergeWork returns the series-days of left and work, each once, with the
// highest generation either names for it (a later delete's raise covers an
// earlier one's).
func mergeWork(left, work []unindexWork) []unindexWork {
	type key struct {
		day uint32
		id  uint64
	}
	at := make(map[key]int)
	var out []unindexWork
	for _, w := range append(left, work...) {
		k := key{w.day, w.ref.ID}
		if i, ok := at[k]; ok {
			if w.gen > out[i].gen {
				out[i].gen = w.gen
			}
			if out[i].ref.Labels.IsEmpty() {
				out[i].ref = w.ref
			}
			continue
		}
		at[k] = len(out)
		out = append(out, w)
	}
	return out
}
