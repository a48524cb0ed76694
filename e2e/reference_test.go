package e2e

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// TestHarnessWithReferenceReceiver runs the whole comparison against a minimal
// in-memory remote-write receiver instead of tsdb: a control experiment. If it
// fails, the harness (or Prometheus) is at fault, not tsdb.
func TestHarnessWithReferenceReceiver(t *testing.T) {
	promBin := prometheusBinary(t)
	dur := min(runDuration(t), 20*time.Second)
	for _, proto := range []struct{ name, msg string }{{"rw1", protoV1}, {"rw2", protoV2}} {
		t.Run(proto.name, func(t *testing.T) {
			t.Parallel()
			rcv := newReferenceReceiver(t)
			runAgainst(t, promBin, t.TempDir(), rcv, "reference receiver", proto.msg, dur, nil)
		})
	}
}

// referenceReceiver decodes remote write 1.0 and 2.0 with Prometheus' own protobuf
// types and keeps every sample in memory; a sample sent twice (a retry) is kept once.
type referenceReceiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	series map[string]*series // by labels.String()
	err    error              // the first bad request
}

func newReferenceReceiver(t *testing.T) *referenceReceiver {
	r := &referenceReceiver{series: map[string]*series{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *referenceReceiver) writeURL() string    { return r.srv.URL + "/api/v1/write" }
func (r *referenceReceiver) metricsAddr() string { return "" }
func (r *referenceReceiver) alive(*testing.T)    {}

func (r *referenceReceiver) stopAndCheck(t *testing.T) {
	r.srv.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		t.Errorf("reference receiver: %v", r.err)
	}
}

// readBack returns what the receiver got; it keeps no metadata.
func (r *referenceReceiver) readBack(_ context.Context, mint, maxt int64, _ []string) (seriesSet, map[string]metadata, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := seriesSet{}
	for k, s := range r.series {
		var kept []sample
		for _, p := range s.samples {
			if p.t >= mint && p.t <= maxt {
				kept = append(kept, p)
			}
		}
		slices.SortFunc(kept, func(a, b sample) int { return int(a.t - b.t) })
		kept = slices.CompactFunc(kept, func(a, b sample) bool { return a.t == b.t })
		if len(kept) > 0 {
			set[k] = &series{labels: s.labels, samples: kept}
		}
	}
	return set, nil, nil
}

func (r *referenceReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if err := r.decode(w, req); err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *referenceReceiver) decode(w http.ResponseWriter, req *http.Request) error {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return err
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	_, params, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch params["proto"] {
	case "", protoV1:
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			return fmt.Errorf("decode 1.0: %w", err)
		}
		for _, ts := range wr.Timeseries {
			b := labels.NewScratchBuilder(len(ts.Labels))
			for _, l := range ts.Labels {
				b.Add(l.Name, l.Value)
			}
			b.Sort()
			for _, s := range ts.Samples {
				r.add(b.Labels(), sample{t: s.Timestamp, v: s.Value})
			}
		}
	case protoV2:
		var wr writev2.Request
		if err := wr.Unmarshal(raw); err != nil {
			return fmt.Errorf("decode 2.0: %w", err)
		}
		b := labels.NewScratchBuilder(0)
		n := 0
		for _, ts := range wr.Timeseries {
			ls, err := ts.ToLabels(&b, wr.Symbols)
			if err != nil {
				return fmt.Errorf("decode 2.0 labels: %w", err)
			}
			for _, s := range ts.Samples {
				r.add(ls, sample{t: s.Timestamp, v: s.Value})
				n++
			}
		}
		w.Header().Set("X-Prometheus-Remote-Write-Samples-Written", strconv.Itoa(n))
		w.Header().Set("X-Prometheus-Remote-Write-Histograms-Written", "0")
		w.Header().Set("X-Prometheus-Remote-Write-Exemplars-Written", "0")
	default:
		return fmt.Errorf("unknown proto %q", params["proto"])
	}
	return nil
}

func (r *referenceReceiver) add(ls labels.Labels, s sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := ls.String()
	se, ok := r.series[k]
	if !ok {
		se = &series{labels: ls}
		r.series[k] = se
	}
	se.samples = append(se.samples, s)
}
