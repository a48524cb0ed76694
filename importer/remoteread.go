package importer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/write"
)

// Defaults of RemoteRead.
const (
	DefaultSlice   = 2 * time.Hour
	DefaultTimeout = 5 * time.Minute
)

// RemoteRead is what to import from a remote-read endpoint.
type RemoteRead struct {
	// URL is the endpoint, e.g. http://prometheus:9090/api/v1/read.
	URL string
	// Selectors are series selectors (`up`, `{job="node"}`); each is one
	// query of every slice.
	Selectors []string
	// Start and End bound the samples read, in milliseconds since the epoch,
	// both inclusive.
	Start, End int64
	// Slice is the time span of one query [DefaultSlice]: the unit of work,
	// of parallelism and of the checkpoint.
	Slice time.Duration
	// Timeout bounds one slice's request, response included [DefaultTimeout].
	Timeout time.Duration
	// ChunkedReadLimit bounds one frame of a streamed response, in bytes
	// [Prometheus' config.DefaultChunkedReadLimit, 50 MB].
	ChunkedReadLimit uint64
}

func (r RemoteRead) withDefaults() RemoteRead {
	if r.Slice == 0 {
		r.Slice = DefaultSlice
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.ChunkedReadLimit == 0 {
		r.ChunkedReadLimit = config.DefaultChunkedReadLimit
	}
	return r
}

// Job is the checkpoint job name of the import: URL, selectors, range and
// slice, which number the slices.
func (r RemoteRead) Job() string {
	r = r.withDefaults()
	return fmt.Sprintf("remote-read %s match=%s start=%d end=%d slice=%s", r.URL, strings.Join(r.Selectors, ","),
		r.Start, r.End, model.Duration(r.Slice))
}

// query is one unit of work: one selector over one slice.
type query struct {
	index      int // the unit's number in the checkpoint
	selector   string
	matchers   []*labels.Matcher
	start, end int64 // inclusive, ms
}

// Check reports what cannot work in r (URL, selectors, range, slice), every
// problem in one error.
func (r RemoteRead) Check() error {
	_, err := r.withDefaults().plan()
	return err
}

// plan checks r and cuts it into its queries: slice-major, so that the
// oldest data comes first.
func (r RemoteRead) plan() ([]query, error) {
	var errs []error
	if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("remote-read URL %q is not an http:// or https:// URL", r.URL))
	}
	if len(r.Selectors) == 0 {
		errs = append(errs, errors.New("no selector: give at least one --match, e.g. --match='{job=\"node\"}' or --match='{__name__=~\".+\"}'"))
	}
	if r.End < r.Start {
		errs = append(errs, fmt.Errorf("the end %s is before the start %s", time.UnixMilli(r.End).UTC().Format(time.RFC3339),
			time.UnixMilli(r.Start).UTC().Format(time.RFC3339)))
	}
	if r.Slice < time.Millisecond {
		errs = append(errs, fmt.Errorf("the slice %s is shorter than a millisecond", r.Slice))
	}
	if r.Timeout < 0 {
		errs = append(errs, fmt.Errorf("the read timeout %s is negative", r.Timeout))
	}
	p := parser.NewParser(parser.Options{})
	sets := make([][]*labels.Matcher, len(r.Selectors))
	for i, s := range r.Selectors {
		ms, err := p.ParseMetricSelector(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("selector %q: %w", s, err))
		}
		sets[i] = ms
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	width := r.Slice.Milliseconds()
	var qs []query
	for start := r.Start; start <= r.End; start += width {
		end := min(start+width-1, r.End)
		for i, s := range r.Selectors {
			qs = append(qs, query{index: len(qs), selector: s, matchers: sets[i], start: start, end: end})
		}
		if end == r.End {
			break
		}
	}
	return qs, nil
}

// ImportRemoteRead imports what r's endpoint returns for r's selectors between
// r.Start and r.End, asking for streamed XOR chunks (and taking sampled
// responses from endpoints that only give those), o.Concurrency slices at a
// time, each written in batches of o.BatchSamples as its frames arrive. Float
// and native histogram samples are imported. With o.Checkpoint, slices it
// records are skipped and each slice is recorded once it is stored.
func ImportRemoteRead(ctx context.Context, r RemoteRead, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	r = r.withDefaults()
	qs, err := r.plan()
	if err != nil {
		return err
	}
	u, _ := url.Parse(r.URL) // plan checked it
	client, err := remote.NewReadClient("tsdb-import", &remote.ClientConfig{
		URL:                   &config_util.URL{URL: u},
		Timeout:               model.Duration(r.Timeout),
		HTTPClientConfig:      config_util.DefaultHTTPClientConfig,
		ChunkedReadLimit:      r.ChunkedReadLimit,
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES},
	})
	if err != nil {
		return fmt.Errorf("importer: remote-read client: %w", err)
	}
	o.Progress.Total.Store(int64(len(qs)))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	skipped := 0
	for _, q := range qs {
		if o.Checkpoint != nil && o.Checkpoint.SliceDone(q.index) {
			o.Progress.Done.Add(1)
			skipped++
			continue
		}
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := importQueryRetrying(gctx, client, q, o); err != nil {
				return err
			}
			o.Progress.Done.Add(1)
			if o.Checkpoint != nil && o.Sink != nil {
				return o.Checkpoint.AddSlice(q.index)
			}
			return nil
		})
	}
	if skipped > 0 {
		o.Logger.Info("resuming from the checkpoint", "slices_done", skipped, "slices", len(qs), "checkpoint", o.Checkpoint.Path())
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// errRead marks the errors of reading from the source, which a slice is
// read again for.
var errRead = errors.New("remote read")

// importQueryRetrying is importQuery, again while reading from the source
// fails, for up to o.RetryFor (the wait doubling from 500ms to 30s): the
// slice is read and written again from its start, which is idempotent.
func importQueryRetrying(ctx context.Context, client remote.ReadClient, q query, o Options) error {
	deadline := time.Now().Add(o.RetryFor)
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := importQuery(ctx, client, q, o)
		if err == nil || !errors.Is(err, errRead) || ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return err
		}
		o.Logger.Warn("remote read failed, reading the slice again", "attempt", attempt, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// importQuery reads one query's series and writes them in batches.
func importQuery(ctx context.Context, client remote.ReadClient, q query, o Options) error {
	where := fmt.Sprintf("slice %s..%s of %s", time.UnixMilli(q.start).UTC().Format(time.RFC3339),
		time.UnixMilli(q.end).UTC().Format(time.RFC3339), q.selector)
	pq, err := remote.ToQuery(q.start, q.end, q.matchers, nil)
	if err != nil {
		return fmt.Errorf("importer: %s: %w", where, err)
	}
	ss, err := client.Read(ctx, pq, false)
	if err != nil {
		// The client's error for a response with a status says it in words
		// only: a 4xx is the request's fault, and reading again cannot help.
		if strings.Contains(err.Error(), "returned http status 4") {
			return fmt.Errorf("importer: remote read %s: %w", where, err)
		}
		return fmt.Errorf("importer: %w %s: %w", errRead, where, err)
	}
	cur := newBatch()
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		var ws *write.Series
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if cur.samples >= o.BatchSamples {
				if err := o.store(ctx, cur, where); err != nil {
					return drain(ss, err)
				}
				cur, ws = newBatch(), nil
			}
			if ws == nil {
				ws = cur.series(s.Labels())
			}
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				ws.Samples = append(ws.Samples, cellenc.Sample{T: t, V: v, ST: it.AtST()})
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(nil)
				ws.Histograms = append(ws.Histograms, cellenc.HistogramSample{T: t, ST: it.AtST(), H: h})
			case chunkenc.ValFloatHistogram:
				t, fh := it.AtFloatHistogram(nil)
				ws.Histograms = append(ws.Histograms, cellenc.HistogramSample{T: t, ST: it.AtST(), FH: fh})
			default:
				return drain(ss, fmt.Errorf("importer: %s: series %s: unknown value type %v", where, s.Labels(), vt))
			}
			cur.samples++
		}
		if err := it.Err(); err != nil {
			return drain(ss, fmt.Errorf("importer: %w %s: series %s: %w", errRead, where, s.Labels(), err))
		}
	}
	if err := ss.Err(); err != nil {
		return fmt.Errorf("importer: %w %s: %w", errRead, where, err)
	}
	return o.store(ctx, cur, where)
}

// drain reads the rest of a series set that is given up on, so that its
// response body is closed, and returns err.
func drain(ss storage.SeriesSet, err error) error {
	for ss.Next() {
	}
	return err
}
