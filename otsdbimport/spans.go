package otsdbimport

import (
	"bytes"
	"slices"

	"github.com/hbtsdb/hbtsdb/otsdbformat"
)

// span is the half-open key range [start, stop) of the data table; a nil
// start is the table's first key, a nil stop its end.
type span struct{ start, stop []byte }

// stopBefore reports whether stop a is below stop b, nil being the end.
func stopBefore(a, b []byte) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	}
	return bytes.Compare(a, b) < 0
}

// reaches reports whether a span stopping at stop covers key (the start of
// another), nil being the end.
func reaches(stop, key []byte) bool { return stop == nil || bytes.Compare(key, stop) <= 0 }

// spanSet is sorted spans that neither overlap nor touch.
type spanSet []span

// add returns s with sp in it, merged with the spans it overlaps or touches.
func (s spanSet) add(sp span) spanSet {
	all := append(slices.Clone(s), sp)
	slices.SortFunc(all, func(a, b span) int { return bytes.Compare(a.start, b.start) })
	out := spanSet{all[0]}
	for _, x := range all[1:] {
		cur := &out[len(out)-1]
		if reaches(cur.stop, x.start) {
			if stopBefore(cur.stop, x.stop) {
				cur.stop = x.stop
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

// missing returns the parts of r that s does not cover, in key order.
func (s spanSet) missing(r span) []span {
	var out []span
	pos := r.start
	for _, x := range s {
		if r.stop != nil && bytes.Compare(x.start, r.stop) >= 0 {
			break
		}
		if x.stop != nil && bytes.Compare(x.stop, pos) <= 0 {
			continue
		}
		if bytes.Compare(x.start, pos) > 0 {
			out = append(out, span{pos, x.start})
		}
		if x.stop == nil {
			return out
		}
		pos = x.stop
	}
	if r.stop == nil || bytes.Compare(pos, r.stop) < 0 {
		out = append(out, span{pos, r.stop})
	}
	return out
}

// plan cuts the data table of layout into key ranges: for each salt bucket,
// ranges that start at metric UIDs (metrics sorted), about total ranges in
// all but at least one per bucket and at most one per metric and bucket.
// Together they cover every key: the first starts at the table's first key,
// the last stops at its end. They are in the order to read them: the first
// range of every bucket, then the second of every bucket, ..., so that
// workers reading at once read different buckets (regions).
func plan(layout otsdbformat.Layout, metrics [][]byte, total int) []span {
	buckets := layout.Buckets()
	perBucket := max(1, min(len(metrics), (total+buckets-1)/buckets))
	out := make([]span, buckets*perBucket)
	for b := range buckets {
		prefix := layout.SaltPrefix(b)
		var start, stop []byte
		if b > 0 {
			start = prefix
		}
		if b+1 < buckets {
			stop = layout.SaltPrefix(b + 1)
		}
		for g := range perBucket {
			end := stop
			if g+1 < perBucket {
				end = append(slices.Clone(prefix), metrics[(g+1)*len(metrics)/perBucket]...)
			}
			out[g*buckets+b] = span{start, end}
			start = end
		}
	}
	return out
}
