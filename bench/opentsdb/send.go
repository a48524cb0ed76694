package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// putQuery is the query string of every request, the same for both targets:
// details makes the answer count the stored and the failed datapoints (and
// name the failures); sync makes OpenTSDB 2.2+ answer only once HBase has
// acknowledged every put of the request, and count the puts HBase failed
// (PutDataPointRpc.processDataPoint: without it, "success" counts the
// datapoints queued for asynchbase, not stored). hbtsdb answers once the
// request is in the store either way, and ignores sync.
func putQuery(sync bool) string {
	if sync {
		return "?details&sync"
	}
	return "?details"
}

// putAnswer is the body of a ?details answer, OpenTSDB's and hbtsdb's alike:
// {"success":S,"failed":F,"errors":[{"datapoint":{...},"error":"..."}]}.
type putAnswer struct {
	Success *int `json:"success"`
	Failed  *int `json:"failed"`
	Errors  []struct {
		Error string `json:"error"`
	} `json:"errors"`
}

// outcome is what one request's answer says of its n datapoints: how many
// were stored, how many failed and why (the first error of the answer, or
// the status and body when there is no ?details answer).
type outcome struct {
	stored, failed int
	reason         string
}

// judge reads one answer to a request of n datapoints. A 200 or 400 with a
// ?details body counts what it says (400 is OpenTSDB's and hbtsdb's status
// when some datapoints failed; OpenTSDB 2.4 answers 200 when only HBase
// failed puts under sync, so the counts decide, not the status); datapoints
// the answer does not account for failed. Anything else fails them all.
func judge(status int, body []byte, n int) outcome {
	if status == http.StatusOK || status == http.StatusBadRequest {
		var a putAnswer
		if err := json.Unmarshal(body, &a); err == nil && a.Success != nil && a.Failed != nil {
			o := outcome{stored: min(max(*a.Success, 0), n)}
			o.failed = n - o.stored
			switch {
			case len(a.Errors) > 0:
				o.reason = a.Errors[0].Error
			case o.failed > 0 && *a.Failed > 0:
				o.reason = fmt.Sprintf("%d failed without errors", *a.Failed)
			case o.failed > 0:
				o.reason = fmt.Sprintf("the answer accounts for %d of %d datapoints", *a.Success+*a.Failed, n)
			}
			return o
		}
	}
	return outcome{failed: n, reason: fmt.Sprintf("HTTP %d: %s", status, snippet(body))}
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// sent is what one ingest delivered: datapoints stored and failed, the most
// frequent reasons, and the wall time from the first request to the last
// answer.
type sent struct {
	stored, failed int
	reasons        map[string]int
	wall           time.Duration
}

// topReasons is the reasons of the failures, most frequent first, at most n.
func (s sent) topReasons(n int) []string {
	type kv struct {
		reason string
		count  int
	}
	var all []kv
	for r, c := range s.reasons {
		all = append(all, kv{r, c})
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].count > all[j].count || all[i].count == all[j].count && all[i].reason < all[j].reason
	})
	var out []string
	for _, e := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%d × %q", e.count, e.reason))
	}
	return out
}

// sender posts an Encoded load's bodies to one target's /api/put.
type sender struct {
	client *http.Client
	log    *slog.Logger
	// query is putQuery's string, the same for every target.
	query string
	// progress is how often a progress line goes to the log.
	progress time.Duration
}

// send posts e to base+"/api/put"+query, a goroutine per sender, each sending
// its bodies one at a time in order, and counts what the answers say. A
// failed request (a transport error, a status other than 200 or 400, an
// answer without counts) fails its datapoints and the ingest goes on; only
// ctx's end stops it.
func (s *sender) send(ctx context.Context, name, base string, e *Encoded) (sent, error) {
	url := base + "/api/put" + s.query
	total := e.Load.Total()
	var stored, failed atomic.Int64
	var mu sync.Mutex
	reasons := map[string]int{}
	t0 := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(s.progress)
		defer tick.Stop()
		last, lastAt := int64(0), t0
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				done := stored.Load() + failed.Load()
				s.log.Info("sending", "target", name, "answered", done, "of", total, "failed", failed.Load(),
					"points_per_s", int(float64(done-last)/now.Sub(lastAt).Seconds()),
					"points_per_s_so_far", int(float64(done)/now.Sub(t0).Seconds()))
				last, lastAt = done, now
			}
		}
	})
	g, gctx := errgroup.WithContext(ctx)
	for i := range e.Bodies {
		g.Go(func() error {
			for j, body := range e.Bodies[i] {
				o, err := s.post(gctx, url, body, e.Load.Gzip, e.Points[i][j])
				if err != nil {
					return fmt.Errorf("%s: sender %d request %d: %w", name, i, j, err)
				}
				stored.Add(int64(o.stored))
				failed.Add(int64(o.failed))
				if o.failed > 0 {
					mu.Lock()
					reasons[o.reason] += o.failed
					mu.Unlock()
				}
			}
			return nil
		})
	}
	err := g.Wait()
	res := sent{stored: int(stored.Load()), failed: int(failed.Load()), reasons: reasons, wall: time.Since(t0)}
	close(stop)
	wg.Wait()
	return res, err
}

// post sends one body of n datapoints and judges the answer. Its error is
// ctx's only: a request that failed otherwise is an outcome with every
// datapoint failed.
func (s *sender) post(ctx context.Context, url string, body []byte, gz bool, n int) (outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return outcome{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hbtsdb-bench-opentsdb")
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		return outcome{failed: n, reason: err.Error()}, nil
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		return outcome{failed: n, reason: "read the answer: " + err.Error()}, nil
	}
	return judge(resp.StatusCode, answer, n), nil
}
