package query

import (
	"context"
	"fmt"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Batched reads. A Select of raw data over a few buckets (a dashboard's hour
// or day) reads its series in batches: one kv.Store.GetRows of the rows of
// every (series, bucket) of the batch — one Pebble iterator on the embedded
// store, one multi-get round trip on HBase — instead of one scan per series,
// whose set-up (an iterator over every level of the LSM, or a round trip) cost
// more than reading the series' few rows. The row keys are known without a
// read: a series' rows over [mint, maxt] are those of the bucket starts from
// BucketStart(mint) to BucketStart(maxt), and a missing row reads as empty.
// Longer ranges (more than maxBatchBuckets buckets, where a series' rows are
// better found by one scan than by as many point reads) and rollup reads read
// one series at a time.
const (
	// maxBatchBuckets is the most buckets a read may span to be batched.
	maxBatchBuckets = 48
	// maxBatchRows bounds the rows of one batch (series × buckets), and so,
	// with Options.Concurrency batches in flight, what a Select holds ahead of
	// its consumer.
	maxBatchRows = 512
)

// fetcher reads the samples of a list of series in order, at most
// Options.Concurrency reads (a series, or a batch of series) ahead of its
// consumer: that many reads run at once, and memory holds at most that many
// reads' rows, whatever the number of series. It starts on the first call of
// next.
type fetcher struct {
	r          *Reader
	ctx        context.Context
	cancel     context.CancelFunc
	series     []series
	mint, maxt int64
	plan       rollupPlan
	batch      int            // series per read
	slots      []chan fetched // read i arrives on slots[i % len(slots)]
	tokens     chan struct{}  // one per read started and not yet consumed
	started    bool
	pos        int     // series consumed so far
	cur        fetched // the read holding series pos, when pos%batch != 0
	samples    int     // samples handed out so far
	// withHistory makes each read also read, for the series that need it,
	// their rows before mint that asHead needs (Reader.history), in the same
	// goroutine as the read; history is that of the series next returned.
	withHistory bool
	history     []cellenc.RowSamples
}

// fetched is one read's outcome: rows[i] are the rows of the read's i-th
// series, history[i] (when read) its rows before mint.
type fetched struct {
	rows    [][]cellenc.RowSamples
	history [][]cellenc.RowSamples
	err     error
}

// newFetcher reads ss under ctx, as plan says (raw data, or a rollup); cancel (of ctx, which may carry the Select's
// Options.Timeout) is called when the fetcher ends or is closed.
func newFetcher(ctx context.Context, cancelParent context.CancelFunc, r *Reader, ss []series, mint, maxt int64, plan rollupPlan) *fetcher {
	ctx, cancelCtx := context.WithCancel(ctx)
	cancel := func() { cancelCtx(); cancelParent() }
	k := min(r.opts.Concurrency, max(len(ss), 1))
	f := &fetcher{r: r, ctx: ctx, cancel: cancel, series: ss, mint: mint, maxt: maxt, plan: plan,
		batch: r.batchSize(len(ss), k, mint, maxt, plan),
		slots: make([]chan fetched, k), tokens: make(chan struct{}, k)}
	for i := range f.slots {
		f.slots[i] = make(chan fetched, 1)
	}
	return f
}

// batchSize is how many of n series one read fetches, with k reads at once:
// 1 unless the read is batched (see above); else as many as make two reads
// per worker, so that the consumer works on one batch while the next are
// read, within maxBatchRows.
func (r *Reader) batchSize(n, k int, mint, maxt int64, plan rollupPlan) int {
	buckets := r.buckets(mint, maxt)
	if plan.mode != modeRaw || buckets > maxBatchBuckets || n <= 1 {
		return 1
	}
	b := (n + 2*k - 1) / (2 * k)
	return max(1, min(b, maxBatchRows/int(buckets)))
}

// buckets is the number of data buckets [mint, maxt] touches (mint <= maxt).
func (r *Reader) buckets(mint, maxt int64) int64 {
	width := r.settings.BucketWidth
	return (schema.BucketStart(maxt, width)-schema.BucketStart(mint, width))/width.Milliseconds() + 1
}

// run starts one read per batch of series, in order, each once a token is free.
func (f *fetcher) run() {
	for i := 0; i*f.batch < len(f.series); i++ {
		select {
		case f.tokens <- struct{}{}:
		case <-f.ctx.Done():
			return
		}
		go func(i int) {
			lo := i * f.batch
			ss := f.series[lo:min(lo+f.batch, len(f.series))]
			var res fetched
			if f.batch == 1 {
				rows, err := f.r.readPlanned(f.ctx, &ss[0], f.mint, f.maxt, f.plan)
				res = fetched{rows: [][]cellenc.RowSamples{rows}, err: err}
			} else {
				res.rows, res.err = f.r.readBatch(f.ctx, ss, f.mint, f.maxt)
			}
			if res.err == nil && f.withHistory && f.plan.mode == modeRaw {
				res.history, res.err = f.r.histories(f.ctx, ss, f.mint, res.rows)
			}
			f.slots[i%len(f.slots)] <- res
		}(i)
	}
}

// next returns the next series and its rows, false at the end or on error
// (then the error).
func (f *fetcher) next() (*series, []cellenc.RowSamples, bool, error) {
	if f.pos >= len(f.series) {
		f.cancel()
		return nil, nil, false, nil
	}
	if !f.started {
		f.started = true
		go f.run()
	}
	if f.pos%f.batch == 0 {
		read := f.pos / f.batch
		select {
		case f.cur = <-f.slots[read%len(f.slots)]:
		case <-f.ctx.Done():
			return nil, nil, false, fmt.Errorf("query: %w", f.ctx.Err())
		}
		<-f.tokens
		if f.cur.err != nil {
			f.cancel()
			return nil, nil, false, f.cur.err
		}
	}
	s := &f.series[f.pos]
	rows := f.cur.rows[f.pos%f.batch]
	f.cur.rows[f.pos%f.batch] = nil // the consumer owns them now
	f.history = nil
	if f.cur.history != nil {
		f.history = f.cur.history[f.pos%f.batch]
		f.cur.history[f.pos%f.batch] = nil
	}
	f.pos++
	for _, b := range rows {
		f.samples += b.Len()
	}
	if maxSamples := f.r.opts.MaxSamples; maxSamples > 0 && f.samples > maxSamples {
		f.cancel()
		return nil, nil, false, fmt.Errorf("query: more than %d samples in %d series: %w", maxSamples, f.pos, ErrTooManySamples)
	}
	return s, rows, true, nil
}

// nextWithSamples is next, skipping the series without a sample in the range (a
// series indexed on a day of the range may have none in it).
func (f *fetcher) nextWithSamples() (*series, []cellenc.RowSamples, bool, error) {
	for {
		ser, rows, ok, err := f.next()
		if !ok || len(rows) > 0 {
			return ser, rows, ok, err
		}
	}
}

// histories returns Reader.history of each of ss (whose rows are rows), nil
// when none has any (float series never do).
func (r *Reader) histories(ctx context.Context, ss []series, mint int64, rows [][]cellenc.RowSamples) ([][]cellenc.RowSamples, error) {
	var out [][]cellenc.RowSamples
	for j := range ss {
		h, err := r.history(ctx, &ss[j], mint, rows[j])
		if err != nil {
			return nil, err
		}
		if h != nil && out == nil {
			out = make([][]cellenc.RowSamples, len(ss))
		}
		if h != nil {
			out[j] = h
		}
	}
	return out, nil
}

// close stops the reads in flight.
func (f *fetcher) close() { f.cancel() }

// readBatch reads the rows of ss overlapping [mint, maxt] (inclusive, ms,
// mint >= 0) with one GetRows, and returns each series' samples, oldest bucket
// first, as readSeries does.
func (r *Reader) readBatch(ctx context.Context, ss []series, mint, maxt int64) ([][]cellenc.RowSamples, error) {
	width := r.settings.BucketWidth
	first, last := schema.BucketStart(mint, width), schema.BucketStart(maxt, width)
	n := int(r.buckets(mint, maxt))
	keys := make([][]byte, 0, len(ss)*n)
	size := 0
	for i := range ss {
		size += schema.DataRowKeyLen(schema.DataKey{Host: ss[i].host, Metric: ss[i].metric}) * n
	}
	buf := make([]byte, 0, size)
	for i := range ss {
		s := &ss[i]
		for b := first; b <= last; b += width.Milliseconds() {
			start := len(buf)
			buf = schema.DataRowKey(buf, schema.DataKey{Salt: s.salt, Host: s.host, Metric: s.metric, SeriesID: s.id, BucketStart: b})
			keys = append(keys, buf[start:len(buf):len(buf)])
		}
	}
	rows, err := r.st.GetRows(ctx, schema.TableData, keys, kv.Families(schema.FamilyChunk, schema.FamilyRaw), r.readRange(mint, maxt))
	if err != nil {
		return nil, fmt.Errorf("query: read %d series: %w", len(ss), err)
	}
	out := make([][]cellenc.RowSamples, len(ss))
	for i := range ss {
		var got []cellenc.RowSamples
		for _, row := range rows[i*n : (i+1)*n] {
			if len(row.Cells) == 0 {
				continue
			}
			b, err := r.decodeRow(ctx, row, mint, maxt)
			if err != nil {
				return nil, fmt.Errorf("query: read series %d (%s): %w", ss[i].id, ss[i].labels, err)
			}
			if b.Len() > 0 {
				got = append(got, b)
			}
		}
		out[i] = got
	}
	return out, nil
}
