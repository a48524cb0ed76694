package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// FileJob is the checkpoint job name of a file import: the absolute path and
// size of the file and its format, so that a checkpoint of another file, or of
// this file before it changed, is refused.
func FileJob(path, format string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("importer: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("importer: %w", err)
	}
	return fmt.Sprintf("%s file %s, %d bytes", format, abs, fi.Size()), nil
}

// Formats of ImportFile.
const (
	// FormatOpenMetrics is the OpenMetrics text format (timestamps in
	// seconds, # EOF at the end).
	FormatOpenMetrics = "openmetrics"
	// FormatPrometheus is Prometheus' text exposition format (timestamps in
	// milliseconds).
	FormatPrometheus = "prometheus"
)

// ImportFile imports the text file at path, in format (FormatOpenMetrics
// or FormatPrometheus): every sample must have a timestamp (as for promtool
// tsdb create-blocks-from openmetrics); counters,
// gauges, summaries and classic histograms are their float series, _created
// series included; # HELP, # TYPE and # UNIT become the metrics' metadata, and
// exemplars are stored with their series. With o.Checkpoint it skips the
// samples before the checkpoint's offset and advances it as batches are
// stored, in file order.
//
// A line that does not parse, or a sample without a timestamp, stops the
// import with an error wrapping ErrBadInput that starts with path:line; the
// batches before it are stored and checkpointed.
func ImportFile(ctx context.Context, path, format string, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if format != FormatOpenMetrics && format != FormatPrometheus {
		return fmt.Errorf("importer: format %q is not %s or %s", format, FormatOpenMetrics, FormatPrometheus)
	}
	o = o.withDefaults()
	data, release, err := mapFile(path)
	if err != nil {
		return fmt.Errorf("importer: %w", err)
	}
	defer release()
	if format == FormatPrometheus && len(data) > 0 && data[len(data)-1] != '\n' {
		// The parser would copy the whole input to add it, and positions
		// in the copy are not the file's.
		data = append(bytes.Clone(data), '\n')
	}
	o.Progress.Total.Store(int64(len(data)))
	var resume int64
	if o.Checkpoint != nil {
		if o.Checkpoint.Complete() {
			o.Progress.Done.Store(int64(len(data)))
			o.Logger.Info("the checkpoint says this file is imported already", "file", path, "checkpoint", o.Checkpoint.Path())
			return nil
		}
		resume = o.Checkpoint.Offset()
		o.Progress.Done.Store(resume)
		if resume > 0 {
			o.Logger.Info("resuming from the checkpoint", "file", path, "offset", resume, "checkpoint", o.Checkpoint.Path())
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	c := &commits{cp: o.Checkpoint, progress: o.Progress, done: map[int]int64{}}
	if o.Sink == nil {
		c.cp = nil // a dry run records nothing
	}
	parseErr := parse(gctx, path, format, data, resume, o, func(b *batch, seq int, end int64, where string) {
		g.Go(func() error {
			if err := o.store(gctx, b, where); err != nil {
				return err
			}
			return c.finish(seq, end)
		})
	})
	if err := g.Wait(); err != nil {
		return err
	}
	if parseErr != nil {
		return parseErr
	}
	if o.Checkpoint != nil && o.Sink != nil {
		return o.Checkpoint.SetComplete()
	}
	return nil
}

// parse reads data and hands each full batch to emit with its sequence number,
// the offset up to which it covers the file, and where it comes from
// (path:first-last line). It stops at the first error, or when ctx is done.
func parse(ctx context.Context, path, format string, data []byte, resume int64, o Options,
	emit func(b *batch, seq int, end int64, where string)) error {
	var p textparse.Parser
	if format == FormatPrometheus {
		p = textparse.NewPromParser(data, labels.NewSymbolTable(), false)
	} else {
		p = textparse.NewOpenMetricsParser(data, labels.NewSymbolTable())
	}
	var (
		pos      = lineCounter{data: data}
		cur      = newBatch()
		seq      int
		first    = 0 // first line of cur
		lastLine = 0 // line of the last entry read
		meta     = map[string]*schema.Metadata{}
		dirty    = map[string]bool{}
		lbls     labels.Labels
		ex       exemplar.Exemplar
	)
	flush := func(end int64) {
		for name := range dirty {
			cur.req.Metadata = append(cur.req.Metadata, *meta[name])
		}
		clear(dirty)
		slices.SortFunc(cur.req.Metadata, func(a, b schema.Metadata) int { return strings.Compare(a.Metric, b.Metric) })
		where := fmt.Sprintf("%s:%d-%d", path, max(first, 1), lastLine)
		if max(first, 1) == lastLine {
			where = fmt.Sprintf("%s:%d", path, lastLine)
		}
		emit(cur, seq, end, where)
		seq++
		cur, first = newBatch(), 0
	}
	family := func(name []byte) *schema.Metadata {
		m, ok := meta[string(name)]
		if !ok {
			m = &schema.Metadata{Metric: string(name)}
			meta[string(name)] = m
		}
		dirty[m.Metric] = true
		return m
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w: %w", path, pos.nextLine(lastLine), ErrBadInput, err)
		}
		switch e {
		case textparse.EntryHelp:
			name, help := p.Help()
			lastLine = pos.line(name, lastLine)
			family(name).Help = string(help)
		case textparse.EntryType:
			name, typ := p.Type()
			lastLine = pos.line(name, lastLine)
			family(name).Type = typ
		case textparse.EntryUnit:
			name, unit := p.Unit()
			lastLine = pos.line(name, lastLine)
			family(name).Unit = string(unit)
		case textparse.EntryComment:
			lastLine = pos.line(p.Comment(), lastLine)
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			off := pos.offset(series)
			lastLine = pos.line(series, lastLine)
			if ts == nil {
				p.Labels(&lbls)
				return fmt.Errorf("%s:%d: %w: sample of %s has no timestamp: an import needs one on every sample "+
					"(as promtool tsdb create-blocks-from openmetrics)", path, lastLine, ErrBadInput, lbls)
			}
			if off >= 0 && off < resume {
				o.Progress.Skipped.Add(1)
				continue
			}
			if cur.samples >= o.BatchSamples {
				flush(off)
			}
			if first == 0 {
				first = lastLine
			}
			// A series' labels are parsed once per batch: its later lines are
			// found by their text.
			s := cur.seriesOfText(series)
			if s == nil {
				p.Labels(&lbls)
				s = cur.seriesWithText(series, lbls)
			}
			s.Samples = append(s.Samples, cellenc.Sample{T: *ts, V: v})
			cur.samples++
			for p.Exemplar(&ex) {
				ex.Labels = ex.Labels.Copy()
				s.Exemplars = append(s.Exemplars, ex)
				ex = exemplar.Exemplar{}
			}
		default:
			lastLine = pos.line(nil, lastLine)
			return fmt.Errorf("%s:%d: %w: native histograms are not part of the text formats", path, lastLine, ErrBadInput)
		}
	}
	if cur.samples > 0 || len(dirty) > 0 {
		flush(int64(len(data)))
	}
	return nil
}

// lineCounter turns positions in data into line numbers, counting newlines
// incrementally (positions only grow).
type lineCounter struct {
	data    []byte
	lastOff int
	lines   int // newlines before lastOff
}

// offset is the position of s in data, or -1 when s is not a part of data
// (the parser unescaped it into a buffer of its own).
func (c *lineCounter) offset(s []byte) int64 {
	if len(s) == 0 || cap(s) > cap(c.data) {
		return -1
	}
	off := cap(c.data) - cap(s)
	if off >= len(c.data) || &c.data[off] != &s[0] {
		return -1
	}
	return int64(off)
}

// line is the 1-based line of s in data, or prev when s is not a part of data.
func (c *lineCounter) line(s []byte, prev int) int {
	off := c.offset(s)
	if off < 0 || int(off) < c.lastOff {
		return prev
	}
	c.lines += bytes.Count(c.data[c.lastOff:off], []byte{'\n'})
	c.lastOff = int(off)
	return c.lines + 1
}

// nextLine is the first line after line that is not blank: where the parser
// went on after the entry on line, which skips blank lines in Prometheus'
// format.
func (c *lineCounter) nextLine(line int) int {
	rest := c.data
	for range line {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return line + 1
		}
		rest = rest[i+1:]
	}
	for n := line + 1; ; n++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 || len(bytes.TrimSpace(rest[:i])) > 0 {
			return n
		}
		rest = rest[i+1:]
	}
}

// commits advances a file import's checkpoint in file order as batches,
// stored in any order, finish.
type commits struct {
	cp       *Checkpoint
	progress *Progress
	mu       sync.Mutex
	next     int
	done     map[int]int64 // finished batches after next: sequence -> end offset
}

func (c *commits) finish(seq int, end int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done[seq] = end
	advanced := int64(-1)
	for {
		e, ok := c.done[c.next]
		if !ok {
			break
		}
		delete(c.done, c.next)
		c.next++
		advanced = e
	}
	if advanced < 0 {
		return nil
	}
	c.progress.Done.Store(advanced)
	if c.cp == nil {
		return nil
	}
	return c.cp.SetOffset(advanced)
}
