package wire

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/write"
)

// putTags are the tags of datapoints, decoded once for every datapoint of a
// body whose tags object has the same JSON text (the scanner's tags table):
// a collector sends the same host's tags in one datapoint after another.
type putTags struct {
	// text is the tags object's JSON text when the scanner decoded it, the key
	// of its tags table; "" for tags decoded by encoding/json.
	text string
	// pairs are the tags sorted by name, without a repeated name.
	pairs []tagPair
	// shown is the tags as a details response echoes them; never nil, shared
	// by the datapoints with these tags and never modified.
	shown map[string]string
	// err is what OpenTSDB says of these tags, "" when they are valid.
	err string
	// flags say what the strings of text held, for the datapoint they are in.
	flags scanFlags
}

type tagPair struct{ name, value string }

// newPutTags is the tags of pairs, sorted by name and not repeating one.
func newPutTags(text string, pairs []tagPair, flags scanFlags) *putTags {
	t := &putTags{text: text, pairs: pairs, shown: make(map[string]string, len(pairs)), flags: flags}
	for _, p := range pairs {
		t.shown[p.name] = p.value
	}
	t.err = tagsError(pairs)
	return t
}

// newPutTagsOfMap is the tags encoding/json decoded (nil when missing or null).
func newPutTagsOfMap(m map[string]string) *putTags {
	pairs := make([]tagPair, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, tagPair{name, m[name]})
	}
	return newPutTags("", pairs, 0)
}

// sortTagPairs sorts the tags of an object by name and reports whether a
// name is repeated (encoding/json then keeps the last; the scanner leaves such
// a datapoint to it).
func sortTagPairs(pairs []tagPair) (repeated bool) {
	slices.SortFunc(pairs, func(a, b tagPair) int { return cmp.Compare(a.name, b.name) })
	for i := 1; i < len(pairs); i++ {
		if pairs[i].name == pairs[i-1].name {
			return true
		}
	}
	return false
}

// tagsError is OpenTSDB's complaint about tags sorted by name, "" when they
// are valid: at least one tag (IncomingDataPoint.validate), and neither an
// empty name nor an empty value (Tags.validateString; a Prometheus label with
// an empty value is no label at all, so storing it would drop the tag). The
// first offending tag by name is named.
func tagsError(pairs []tagPair) string {
	if len(pairs) < 1 {
		return "Missing tags"
	}
	for _, p := range pairs {
		switch {
		case p.name == "":
			return "Invalid tag name: empty string"
		case p.value == "":
			return fmt.Sprintf("Invalid tag value for tag %q: empty string", p.name)
		}
	}
	return ""
}

// all yields the tags, for PutLabels.
func (t *putTags) all(yield func(name, value string) bool) {
	for _, p := range t.pairs {
		if !yield(p.name, p.value) {
			return
		}
	}
}

// seriesKey names a series by what its datapoints were decoded into: the
// metric and the interned tags. Two keys may name one series (the same tags
// written in another order, or decoded by encoding/json); putSeries merges
// them by labels.
type seriesKey struct {
	metric string
	tags   *putTags
}

// putSample is a valid datapoint's sample before the samples are laid out by
// series: the series, the datapoint's index, and the sample.
type putSample struct {
	series, datapoint int
	sample            cellenc.Sample
}

// putSeries collects the series of a body, in the order of their first
// datapoint, and the samples of each.
type putSeries struct {
	b        labels.ScratchBuilder
	byKey    map[seriesKey]int
	byHash   map[uint64]int // the first series of each labels hash
	series   []write.Series
	samples  []putSample
	nSamples []int // samples of each series
}

// newPutSeries sizes its tables for about n datapoints, every one its own
// series (bench/opentsdb's bodies): growing them cost a tenth of DecodePut.
func newPutSeries(n int) putSeries {
	return putSeries{
		b:       labels.NewScratchBuilder(8),
		byKey:   make(map[seriesKey]int, n),
		byHash:  make(map[uint64]int, n),
		samples: make([]putSample, 0, n),
	}
}

// add appends the sample of datapoint i to its series.
func (ps *putSeries) add(i int, metric string, tags *putTags, x cellenc.Sample) {
	key := seriesKey{metric, tags}
	s, ok := ps.byKey[key]
	if !ok {
		s = ps.of(PutLabels(&ps.b, metric, tags.all))
		ps.byKey[key] = s
	}
	ps.samples = append(ps.samples, putSample{series: s, datapoint: i, sample: x})
	ps.nSamples[s]++
}

// of is the index of the series of lbls, a new one if it is not there yet.
func (ps *putSeries) of(lbls labels.Labels) int {
	h := lbls.Hash()
	if s, ok := ps.byHash[h]; ok {
		if labels.Equal(ps.series[s].Labels, lbls) {
			return s
		}
		// A hash collision: look at every series.
		for s := range ps.series {
			if labels.Equal(ps.series[s].Labels, lbls) {
				return s
			}
		}
	} else {
		ps.byHash[h] = len(ps.series)
	}
	ps.series = append(ps.series, write.Series{Labels: lbls})
	ps.nSamples = append(ps.nSamples, 0)
	return len(ps.series) - 1
}

// request lays the samples out by series, in body order within each, in one
// array for all series (and one for origin), and returns the series and
// origin (see Put.origin).
func (ps *putSeries) request() ([]write.Series, [][]int) {
	if len(ps.series) == 0 {
		return nil, nil
	}
	samples := make([]cellenc.Sample, len(ps.samples))
	points := make([]int, len(ps.samples))
	origin := make([][]int, len(ps.series))
	at := 0
	for s, n := range ps.nSamples {
		ps.series[s].Samples = samples[at : at : at+n]
		origin[s] = points[at : at : at+n]
		at += n
	}
	for _, x := range ps.samples {
		ps.series[x.series].Samples = append(ps.series[x.series].Samples, x.sample)
		origin[x.series] = append(origin[x.series], x.datapoint)
	}
	return ps.series, origin
}
