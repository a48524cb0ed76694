package promapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/query"
)

// DefaultExportOptions are the bounds the server runs with unless flags say
// otherwise.
func DefaultExportOptions() ExportOptions {
	return ExportOptions{MaxSamplesPerLine: 10_000, MaxConcurrent: 2}
}

// ExportOptions bound GET|POST /api/v1/export. Zero fields take the defaults.
type ExportOptions struct {
	// MaxSamplesPerLine bounds the samples of one JSON line [10000]: a series
	// with more is written as several lines, so that memory stays bounded by a
	// line whatever a series holds. The `max_rows_per_line` query argument, as
	// VictoriaMetrics', may ask for fewer.
	MaxSamplesPerLine int
	// MaxConcurrent bounds the exports that run at once [2]; more wait for a
	// slot while their client waits.
	MaxConcurrent int
}

func (o ExportOptions) withDefaults() ExportOptions {
	d := DefaultExportOptions()
	if o.MaxSamplesPerLine <= 0 {
		o.MaxSamplesPerLine = d.MaxSamplesPerLine
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = d.MaxConcurrent
	}
	return o
}

// Validate refuses negative bounds, every one of them (errors.Join); zero
// takes the default.
func (o ExportOptions) Validate() error {
	return errors.Join(
		notNegative("ExportOptions.MaxSamplesPerLine", o.MaxSamplesPerLine),
		notNegative("ExportOptions.MaxConcurrent", o.MaxConcurrent),
	)
}

// vmExport serves VictoriaMetrics' GET|POST /api/v1/export
// (https://docs.victoriametrics.com/victoriametrics/single-server-victoriametrics/#how-to-export-data-in-json-line-format):
// the raw samples of every series that matches any `match[]` selector
// (required, one or more) between `start` and `end` (inclusive; Unix seconds,
// fractions allowed, or RFC 3339; default: everything up to now), as JSON lines
// in wire.DecodeVMImport's format, so that /api/v1/import reads back exactly
// what was exported. Values are written in the shortest form that reads back
// to the same float64; NaN (stale markers included) as null and ±Inf as
// "Infinity" and "-Infinity", as VictoriaMetrics writes them (and its import
// skips null, so a stale marker does not survive an export and import, as in
// VictoriaMetrics). Native histogram samples have no form in this format and
// are left out.
//
// It reads through the same Querier as remote read (raw samples, never
// rollups), series by series, and writes each series as lines of at most
// MaxSamplesPerLine samples (or `max_rows_per_line`, when smaller) through a
// buffered writer: memory holds one line, whatever the answer's size. One
// export is one Select of the read path, so the select limits bound it (the
// series and samples one Select may read). Bad arguments are answered 400 in
// plain text before anything is read; a select limit reached before the first
// series is 422, a store failure 503 or 500; one after it aborts the response
// (the client sees a broken transfer, not a short answer that looks whole).
type vmExport struct {
	q      storage.Queryable
	opts   ExportOptions
	slots  chan struct{}
	ready  func() error
	logger *slog.Logger
	now    func() time.Time
}

func newVMExport(q storage.Queryable, opts ExportOptions, ready func() error, logger *slog.Logger) *vmExport {
	opts = opts.withDefaults()
	return &vmExport{q: q, opts: opts, slots: make(chan struct{}, opts.MaxConcurrent), ready: ready, logger: logger, now: time.Now}
}

// exportArgs are the parsed arguments of one export.
type exportArgs struct {
	sets       [][]*labels.Matcher
	start, end int64
	perLine    int
}

func (e *vmExport) parseArgs(r *http.Request) (exportArgs, error) {
	a := exportArgs{start: math.MinInt64, end: e.now().UnixMilli(), perLine: e.opts.MaxSamplesPerLine}
	if err := r.ParseForm(); err != nil {
		return a, fmt.Errorf("cannot parse form values: %w", err)
	}
	if len(r.Form["match[]"]) == 0 {
		return a, fmt.Errorf("missing `match[]` arg")
	}
	p := parser.NewParser(parser.Options{})
	for _, s := range r.Form["match[]"] {
		ms, err := p.ParseMetricSelector(s)
		if err != nil {
			return a, fmt.Errorf("cannot parse `match[]=%s`: %w", s, err)
		}
		a.sets = append(a.sets, ms)
	}
	var err error
	if s := r.Form.Get("start"); s != "" {
		if a.start, err = parseExportTime("start", s); err != nil {
			return a, err
		}
	}
	if s := r.Form.Get("end"); s != "" {
		if a.end, err = parseExportTime("end", s); err != nil {
			return a, err
		}
	}
	if a.start > a.end {
		return a, fmt.Errorf("`start` (%d ms) is after `end` (%d ms)", a.start, a.end)
	}
	if s := r.Form.Get("max_rows_per_line"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return a, fmt.Errorf("cannot parse `max_rows_per_line=%s`: not a non-negative integer", s)
		}
		if n > 0 && n < a.perLine {
			a.perLine = n
		}
	}
	return a, nil
}

// parseExportTime reads a time argument: Unix seconds (fractions allowed) or
// RFC 3339, as Prometheus' HTTP API, in milliseconds.
func parseExportTime(name, s string) (int64, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		ms := math.Round(f * 1000)
		if math.IsNaN(ms) || ms < math.MinInt64 || ms >= math.MaxInt64 {
			return 0, fmt.Errorf("cannot parse `%s=%s`: out of range", name, s)
		}
		return int64(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("cannot parse `%s=%s`: neither Unix seconds nor RFC 3339", name, s)
	}
	return t.UnixMilli(), nil
}

func (e *vmExport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, err := e.parseArgs(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := e.ready(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	case <-r.Context().Done():
		return
	}
	// Raw samples, never rollups, as remote read.
	ctx := query.WithResolution(r.Context(), query.ResolutionRaw)
	q, err := e.q.Querier(a.start, a.end)
	if err != nil {
		e.fail(w, r, err)
		return
	}
	defer q.Close()
	ss := e.selectAll(ctx, q, a)
	ew := &exportWriter{bw: bufio.NewWriterSize(w, 64<<10), perLine: a.perLine}
	w.Header().Set("Content-Type", "application/stream+json; charset=utf-8")
	started := false // a series was read: bytes may have gone out
	for ss.Next() {
		started = true
		if err := ew.series(ss.At()); err != nil {
			e.abort(r, err)
		}
	}
	if err := ss.Err(); err != nil {
		if !started {
			e.fail(w, r, err)
			return
		}
		e.abort(r, err)
	}
	if err := ew.bw.Flush(); err != nil {
		e.abort(r, err)
	}
}

// selectAll is the union of the series every match[] selects, sorted by labels.
func (e *vmExport) selectAll(ctx context.Context, q storage.Querier, a exportArgs) storage.SeriesSet {
	hints := &storage.SelectHints{Start: a.start, End: a.end}
	if len(a.sets) == 1 {
		return q.Select(ctx, false, hints, a.sets[0]...)
	}
	sets := make([]storage.SeriesSet, 0, len(a.sets))
	for _, ms := range a.sets {
		sets = append(sets, q.Select(ctx, true, hints, ms...))
	}
	return storage.NewMergeSeriesSet(sets, 0, storage.ChainedSeriesMerge)
}

// fail answers an export that failed before its first line.
func (e *vmExport) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, query.ErrLimitExceeded):
		// --query.max-series / --query.max-samples of one Select: the
		// client must narrow match[] or the time range.
		status = http.StatusUnprocessableEntity
	case errors.Is(err, context.Canceled):
		status = statusClientClosedRequest
	case unavailable(err), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
	}
	if status != statusClientClosedRequest {
		e.logger.Error("export failed", "path", r.URL.Path, "status", status, "remote", r.RemoteAddr, "err", err)
	}
	http.Error(w, err.Error(), status)
}

// abort ends an export whose answer has begun: net/http drops the connection,
// so the client cannot take a cut answer for a whole one.
func (e *vmExport) abort(r *http.Request, err error) {
	if r.Context().Err() == nil {
		e.logger.Error("export aborted", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
	}
	panic(http.ErrAbortHandler)
}

// exportWriter writes series as JSON lines, at most perLine samples a line.
type exportWriter struct {
	bw      *bufio.Writer
	perLine int
	metric  []byte // the line's "metric" object, once per series
	buf     []byte
	ts      []int64
	vs      []float64
}

func (x *exportWriter) series(s storage.Series) error {
	x.metric = appendMetric(x.metric[:0], s.Labels())
	x.ts, x.vs = x.ts[:0], x.vs[:0]
	it := s.Iterator(nil)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			continue // native histograms have no JSON-line form
		}
		t, v := it.At()
		x.ts, x.vs = append(x.ts, t), append(x.vs, v)
		if len(x.ts) == x.perLine {
			if err := x.line(); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("export: read series %s: %w", s.Labels(), err)
	}
	return x.line()
}

// line writes the buffered samples as one line, if there are any.
func (x *exportWriter) line() error {
	if len(x.ts) == 0 {
		return nil
	}
	b := append(x.buf[:0], `{"metric":`...)
	b = append(b, x.metric...)
	b = append(b, `,"values":[`...)
	for i, v := range x.vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendExportValue(b, v)
	}
	b = append(b, `],"timestamps":[`...)
	for i, t := range x.ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	b = append(b, "]}\n"...)
	x.buf = b
	x.ts, x.vs = x.ts[:0], x.vs[:0]
	_, err := x.bw.Write(b)
	return err
}

// appendExportValue writes v as VictoriaMetrics' export does: NaN as null, ±Inf
// as "Infinity" / "-Infinity", others in the shortest form that parses back to
// the same float64.
func appendExportValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "null"...)
	case math.IsInf(v, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendMetric writes labels as a JSON object, __name__ first as they sort.
func appendMetric(b []byte, ls labels.Labels) []byte {
	b = append(b, '{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, l.Name)
		b = append(b, ':')
		b = appendJSONString(b, l.Value)
	})
	return append(b, '}')
}

// appendJSONString writes s as a JSON string (RFC 8259, section 7): quote,
// backslash and control characters escaped (\n, \r and \t short, as
// encoding/json), invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
