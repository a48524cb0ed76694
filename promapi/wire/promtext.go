package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/write"
)

// DecodePromText decodes a body of VictoriaMetrics' POST
// /api/v1/import/prometheus: Prometheus' text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), parsed by
// Prometheus' own parser (model/textparse), one line at a time so that an error
// names its line. A sample without a timestamp gets defaultTimestamp
// (milliseconds; promapi passes the `timestamp` query argument, or the server's
// clock, as VictoriaMetrics does). Comment, HELP and TYPE lines are parsed and
// checked but carry nothing that is stored. Samples of one label set, wherever
// they are in the body, become one series.
//
// NaN values are skipped and counted in SkippedNaN, as VictoriaMetrics' storage
// skips them (see DecodeVMImport); ±Inf are stored. A line that does not parse
// refuses the whole body with an error wrapping write.ErrInvalid and naming the
// line, e.g. `line 2: expected value after metric, got "\n" ("EOF")`, and nothing of
// it is written.
func DecodePromText(body []byte, defaultTimestamp int64) (Import, error) {
	var (
		d      Import
		st     = labels.NewSymbolTable()
		lset   labels.Labels
		byHash = map[uint64][]int{}
		buf    []byte
	)
	for len(body) > 0 {
		d.Lines++
		line := body
		if n := bytes.IndexByte(body, '\n'); n >= 0 {
			line, body = body[:n], body[n+1:]
		} else {
			body = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		buf = append(append(buf[:0], line...), '\n')
		p := textparse.NewPromParser(buf, st, false)
		for {
			entry, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return Import{}, fmt.Errorf("%w: line %d: %v", write.ErrInvalid, d.Lines, err)
			}
			if entry != textparse.EntrySeries {
				// HELP, TYPE, UNIT and comments; the text format has no
				// histogram entries.
				continue
			}
			_, ts, v := p.Series()
			if math.IsNaN(v) {
				d.SkippedNaN++
				continue
			}
			t := defaultTimestamp
			if ts != nil {
				t = *ts
			}
			p.Labels(&lset)
			i := d.seriesIndex(byHash, lset)
			d.Request.Series[i].Samples = append(d.Request.Series[i].Samples, cellenc.Sample{T: t, V: v})
			d.sampleLines[i] = append(d.sampleLines[i], d.Lines)
		}
	}
	return d, nil
}

// seriesIndex finds the series of lset among those decoded so far, or adds it.
func (d *Import) seriesIndex(byHash map[uint64][]int, lset labels.Labels) int {
	h := lset.Hash()
	for _, i := range byHash[h] {
		if labels.Equal(d.Request.Series[i].Labels, lset) {
			return i
		}
	}
	i := len(d.Request.Series)
	d.Request.Series = append(d.Request.Series, write.Series{Labels: lset.Copy()})
	d.sampleLines = append(d.sampleLines, nil)
	d.seriesLine = append(d.seriesLine, d.Lines)
	byHash[h] = append(byHash[h], i)
	return i
}
