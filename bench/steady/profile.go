package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hbtsdb/hbtsdb/kv"
)

// CPU categories of tsdb's profiles, in report order.
const (
	catIngest     = "ingest"
	catCompaction = "compaction"
	catStore      = "store background"
	catQuery      = "queries"
	catWAL        = "store WAL"
	catGC         = "GC"
	catHBase      = "HBase client"
	catOther      = "other"
)

var categories = []string{catIngest, catCompaction, catStore, catQuery, catWAL, catGC, catHBase, catOther}

// Frames that say what a sample's goroutine does whatever its label: Pebble's
// background work (flushes, compactions, table statistics, deleting obsolete
// files) runs in goroutines started from whichever goroutine triggered it, so
// it inherits that one's label; its WAL writer and gohbase's region clients
// run in goroutines started at open, with none.
var (
	storeFrames = []string{
		"pebble/v2.(*DB).flush", "pebble/v2.(*DB).runIngestFlush", "pebble/v2.(*DB).compact",
		"pebble/v2.(*DB).runCompaction", "pebble/v2.(*DB).runPickedCompaction", "pebble/v2.(*DB).collectTableStats",
		"pebble/v2.(*DB).loadTable", "pebble/v2.(*DB).deleteObsoleteFiles", "pebble/v2.(*cleanupManager)",
	}
	walFrames   = []string{"pebble/v2/record.(*LogWriter)"}
	gcFrames    = []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}
	hbaseFrames = []string{"tsuna/gohbase/region.(*client)"}
)

// classify returns the category of one sample of a CPU profile: Pebble's
// background work and WAL writer by their frames, then the job label
// (kv.JobLabel), then the GC's and gohbase's goroutines by their frames.
func classify(s *profile.Sample) string {
	hasFrame := func(names []string) bool {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				for _, n := range names {
					if strings.Contains(line.Function.Name, n) {
						return true
					}
				}
			}
		}
		return false
	}
	switch {
	case hasFrame(storeFrames):
		return catStore
	case hasFrame(walFrames):
		return catWAL
	}
	if jobs := s.Label[kv.JobLabel]; len(jobs) > 0 {
		switch jobs[0] {
		case kv.JobIngest:
			return catIngest
		case kv.JobCompaction:
			return catCompaction
		case kv.JobQuery:
			return catQuery
		}
	}
	switch {
	case hasFrame(gcFrames):
		return catGC
	case hasFrame(hbaseFrames):
		return catHBase
	}
	return catOther
}

// cpuSplit is the CPU of a profile by category, and in all.
type cpuSplit struct {
	start, end time.Time
	by         map[string]time.Duration
	total      time.Duration
}

// split classifies every sample of a CPU profile (sample type cpu/nanoseconds).
func split(p *profile.Profile) (cpuSplit, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return cpuSplit{}, fmt.Errorf("profile has no cpu/nanoseconds sample type")
	}
	cs := cpuSplit{by: map[string]time.Duration{}}
	for _, s := range p.Sample {
		d := time.Duration(s.Value[idx])
		cs.by[classify(s)] += d
		cs.total += d
	}
	return cs, nil
}

// profiler takes tsdb's CPU profiles back to back (/debug/pprof/profile,
// --web.enable-pprof), each of length every, until ctx is done.
type profiler struct {
	base   string
	every  time.Duration
	client *http.Client
	log    *slog.Logger

	mu     sync.Mutex
	splits []cpuSplit
}

func (p *profiler) run(ctx context.Context) {
	for ctx.Err() == nil {
		start := time.Now()
		u := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.base, int(p.every.Seconds()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			p.log.Error("profile request", "err", err)
			return
		}
		resp, err := p.client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("profile failed; the next one is taken at once", "err", err)
			}
			continue
		}
		prof, err := profile.Parse(resp.Body)
		resp.Body.Close()
		if err != nil {
			p.log.Warn("profile does not parse; the next one is taken at once", "status", resp.Status, "err", err)
			continue
		}
		cs, err := split(prof)
		if err != nil {
			p.log.Warn("profile", "err", err)
			continue
		}
		cs.start, cs.end = start, time.Now()
		p.mu.Lock()
		p.splits = append(p.splits, cs)
		p.mu.Unlock()
	}
}

func (p *profiler) snapshot() []cpuSplit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]cpuSplit(nil), p.splits...)
}
