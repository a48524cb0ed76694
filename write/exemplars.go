package write

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Exemplars are stored in table schema.TableExemplars, one cell per exemplar,
// in the series' own key range (the layout and its bound are documented in
// schema/exemplar.go). Per series and request, appendExemplarMutations:
//
//  1. sorts the exemplars as Prometheus orders them (exemplar.Compare:
//     timestamp, value, labels) and drops exact repeats;
//  2. groups them by slot (schema.ExemplarSlotOffset of the exemplar's bucket,
//     slot width Options.ExemplarSlot) and keeps the newest
//     Options.ExemplarsPerSlot of each slot — the bound: what a slot keeps is what the newest writes put there;
//  3. puts each kept exemplar, oldest first, at (slot, index): index is the
//     place its time in the slot points to (schema.ExemplarIndex), or when an
//     exemplar of the same request took it, the next free one — so the kept
//     exemplars of a request all get a place, and exemplars of different
//     requests meet in a place only when their times are within
//     slot/perSlot of each other. The cell timestamp is the exemplar's, so that
//     a re-sent request rewrites the same cells, and a newer exemplar sent
//     later to an occupied place replaces the stored one (one version per
//     cell, the newest timestamp wins on both backends).
//
// The slot width and per-slot bound are Options.ExemplarSlot and
// ExemplarsPerSlot.

// validateExemplars reports what is wrong with the exemplar bounds of o.
func (o Options) validateExemplars() error {
	var errs []error
	if o.ExemplarSlot < 0 || (o.ExemplarSlot > 0 && o.ExemplarSlot%time.Millisecond != 0) {
		errs = append(errs, fmt.Errorf("write: Options.ExemplarSlot must be a whole number of milliseconds (0 means the default, %s), got %s",
			schema.DefaultExemplarSlot, o.ExemplarSlot))
	}
	if o.ExemplarsPerSlot < 0 || o.ExemplarsPerSlot > schema.MaxExemplarsPerSlot {
		errs = append(errs, fmt.Errorf("write: Options.ExemplarsPerSlot must be in [1, %d] (0 means the default, %d), got %d",
			schema.MaxExemplarsPerSlot, schema.DefaultExemplarsPerSlot, o.ExemplarsPerSlot))
	}
	return errors.Join(errs...)
}

// appendExemplarMutations appends to muts the puts (of table
// schema.TableExemplars) that store ex, the validated exemplars of the series
// whose data key is k (k.BucketStart is ignored), using buf for keys and values;
// it returns both and how many exemplars the puts store: repeats within ex,
// exemplars over the per-slot bound and any timestamp a cell cannot have
// (outside [0, kv.MaxTimestamp]) are left out and not counted. ex is not
// modified.
func (w *Writer) appendExemplarMutations(muts []kv.Mutation, buf []byte, k schema.DataKey, ex []exemplar.Exemplar) ([]kv.Mutation, []byte, int) {
	sorted := make([]exemplar.Exemplar, 0, len(ex))
	for _, e := range ex {
		if e.Ts >= 0 && e.Ts <= kv.MaxTimestamp {
			sorted = append(sorted, e)
		}
	}
	slices.SortStableFunc(sorted, exemplar.Compare)
	sorted = slices.CompactFunc(sorted, func(a, b exemplar.Exemplar) bool {
		return exemplar.Compare(a, b) == 0 && a.HasTs == b.HasTs
	})
	return appendExemplarPuts(muts, buf, k, sorted, w.width, w.opts.ExemplarSlot, w.opts.ExemplarsPerSlot)
}

// appendExemplarPuts is step 2 and 3 of appendExemplarMutations on sorted,
// the exemplars of one series sorted by exemplar.Compare, without repeats and
// with storable timestamps.
func appendExemplarPuts(muts []kv.Mutation, buf []byte, k schema.DataKey, sorted []exemplar.Exemplar,
	width, slot time.Duration, perSlot int) ([]kv.Mutation, []byte, int) {
	var (
		row      []byte
		rowStart int64 = -1
		stored   int
	)
	for i := 0; i < len(sorted); {
		// The group of sorted[i]: the exemplars of its slot, sorted[i:j].
		bs := schema.BucketStart(sorted[i].Ts, width)
		off := schema.ExemplarSlotOffset(sorted[i].Ts, bs, slot)
		j := i + 1
		for j < len(sorted) && schema.BucketStart(sorted[j].Ts, width) == bs && schema.ExemplarSlotOffset(sorted[j].Ts, bs, slot) == off {
			j++
		}
		group := sorted[max(i, j-perSlot):j]
		i = j
		if bs != rowStart {
			start := len(buf)
			k.BucketStart = bs
			buf = schema.DataRowKey(buf, k)
			row, rowStart = buf[start:len(buf):len(buf)], bs
		}
		var taken [schema.MaxExemplarsPerSlot]bool
		for _, e := range group {
			idx := schema.ExemplarIndex(e.Ts, bs+off, slot, perSlot)
			for taken[idx] {
				idx = (idx + 1) % perSlot // len(group) <= perSlot: one is free
			}
			taken[idx] = true
			start := len(buf)
			// off lies in [0, width), and widths fit 32 bits: no error.
			buf, _ = schema.AppendExemplarQualifier(buf, off, uint8(idx))
			mid := len(buf)
			buf = cellenc.AppendExemplarValue(buf, e)
			muts = append(muts, kv.Put(row, schema.FamilyExemplars, buf[start:mid:mid], e.Ts, buf[mid:len(buf):len(buf)]))
			stored++
		}
	}
	return muts, buf, stored
}
