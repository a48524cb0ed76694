package query

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Matchers are turned into posting-list operations per index day, as
// Prometheus' tsdb does with its own index (tsdb.PostingsForMatchers):
//
//   - a matcher that does not match the empty string selects the series whose
//     value of its label matches: the posting list of that value (=), of each
//     value of a set regex (=~"a|b", several gets in one batch), or of every
//     matching value found by scanning the label's value range from the regex's
//     literal prefix (other =~, !~, !=""); these lists are intersected;
//   - a matcher that matches the empty string (="" , !="x", !~"x", =~"x|") also
//     selects the series without its label, so it is applied as a difference:
//     the series whose value does NOT match it are removed;
//   - with no matcher of the first kind, the candidates are every series of the
//     day (the posting lists of __name__).

// dayIDs returns the IDs of the series of day that match every matcher,
// ascending.
func (r *Reader) dayIDs(ctx context.Context, day uint32, ms []*labels.Matcher) ([]uint64, error) {
	var pos, neg []*labels.Matcher
	for _, m := range ms {
		if m.Matches("") {
			neg = append(neg, m)
		} else {
			pos = append(pos, m)
		}
	}
	// Cheap lists first: an empty intersection stops before any scan.
	slices.SortStableFunc(pos, func(a, b *labels.Matcher) int { return matcherCost(a) - matcherCost(b) })
	var ids []uint64
	for i, m := range pos {
		p, err := r.matching(ctx, day, m)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			ids = p
		} else {
			ids = intersect(ids, p)
		}
		if len(ids) == 0 {
			return nil, nil
		}
	}
	if len(pos) == 0 {
		var err error
		if ids, err = r.postings.LabelSeries(ctx, day, model.MetricNameLabel); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
	}
	for _, m := range neg {
		if len(ids) == 0 {
			return nil, nil
		}
		drop, err := r.notMatching(ctx, day, m)
		if err != nil {
			return nil, err
		}
		ids = subtract(ids, drop)
	}
	return ids, nil
}

// matcherCost orders matchers that do not match "": one get, a batch of gets,
// a prefixed scan, a scan of every value of a label.
func matcherCost(m *labels.Matcher) int {
	switch {
	case m.Type == labels.MatchEqual:
		return 0
	case m.Type == labels.MatchRegexp && len(m.SetMatches()) > 0:
		return 1
	case m.Type == labels.MatchRegexp && m.Prefix() != "":
		return 2
	}
	return 3
}

// matching returns the series of day whose value of m's label is non-empty and
// matches m, ascending.
func (r *Reader) matching(ctx context.Context, day uint32, m *labels.Matcher) ([]uint64, error) {
	var (
		ids []uint64
		err error
	)
	switch {
	case m.Type == labels.MatchEqual:
		ids, err = r.postings.Equal(ctx, day, m.Name, m.Value)
	case m.Type == labels.MatchRegexp && len(m.SetMatches()) > 0:
		ids, err = r.postings.AnyOf(ctx, day, m.Name, m.SetMatches())
	case m.Type == labels.MatchNotEqual && m.Value == "", m.Type == labels.MatchRegexp && m.Value == ".+":
		ids, err = r.postings.LabelSeries(ctx, day, m.Name)
	default:
		prefix := ""
		if m.Type == labels.MatchRegexp {
			prefix = m.Prefix()
		}
		ids, err = r.postings.Matching(ctx, day, m.Name, prefix, m.Matches)
	}
	if err != nil {
		return nil, fmt.Errorf("query: series matching %s: %w", m, err)
	}
	return ids, nil
}

// notMatching returns the series of day that have m's label with a value m does
// not match, ascending: those a matcher that matches "" removes.
func (r *Reader) notMatching(ctx context.Context, day uint32, m *labels.Matcher) ([]uint64, error) {
	var (
		ids []uint64
		err error
	)
	switch {
	case m.Type == labels.MatchRegexp && m.Value == ".*":
		return nil, nil
	case m.Type == labels.MatchNotEqual:
		ids, err = r.postings.Equal(ctx, day, m.Name, m.Value)
	case m.Type == labels.MatchEqual: // ="": every series with the label
		ids, err = r.postings.LabelSeries(ctx, day, m.Name)
	case m.Type == labels.MatchNotRegexp && len(m.SetMatches()) > 0:
		ids, err = r.postings.AnyOf(ctx, day, m.Name, m.SetMatches())
	case m.Type == labels.MatchNotRegexp:
		ids, err = r.postings.Matching(ctx, day, m.Name, m.Prefix(), func(v string) bool { return !m.Matches(v) })
	default:
		ids, err = r.postings.Matching(ctx, day, m.Name, "", func(v string) bool { return !m.Matches(v) })
	}
	if err != nil {
		return nil, fmt.Errorf("query: series not matching %s: %w", m, err)
	}
	return ids, nil
}

// subtract returns the IDs of a that are not in b (both ascending), reusing a.
func subtract(a, b []uint64) []uint64 {
	if len(b) == 0 {
		return a
	}
	out := a[:0]
	j := 0
	for _, id := range a {
		for j < len(b) && b[j] < id {
			j++
		}
		if j < len(b) && b[j] == id {
			continue
		}
		out = append(out, id)
	}
	return out
}
