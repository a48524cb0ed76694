package cellenc_test

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// goldenBucket is a bucket of 400 samples at 1 s, of the kinds the case number
// c asks for: bit 0 start timestamps on every 7th sample, bit 1 integer
// histograms (bit 2: with a counter reset every 50 samples), bit 3 float
// histograms, in runs of 1 + c%5 samples of a kind.
func goldenBucket(c int) ([]cellenc.Sample, []cellenc.HistogramSample) {
	ih := tsdbutil.GenerateTestHistograms(400)
	fh := tsdbutil.GenerateTestFloatHistograms(400)
	var (
		fs []cellenc.Sample
		hs []cellenc.HistogramSample
	)
	for i := range 400 {
		ts := int64(i*1000 + 1)
		st := int64(0)
		if c&1 != 0 && i%7 == 0 {
			st = ts - 5
		}
		switch k := (i / (1 + c%5)) % 3; {
		case c&2 != 0 && k == 1:
			h := ih[i]
			if c&4 != 0 && i%50 == 0 {
				h = ih[0].Copy()
			}
			hs = append(hs, cellenc.HistogramSample{T: ts, ST: st, H: h})
		case c&8 != 0 && k == 2:
			hs = append(hs, cellenc.HistogramSample{T: ts, ST: st, FH: fh[i]})
		default:
			fs = append(fs, cellenc.Sample{T: ts, V: float64(i%13) * 0.25, ST: st})
		}
	}
	return fs, hs
}

// TestBucketCellBytesAreStable: the chunk cells compaction writes keep their
// bytes (existing stores hold them, and a bucket compacted again must not
// change without a reason). The digest covers 16 buckets mixing floats,
// integer and float histograms, counter resets and start timestamps, computed
// with the encoder before it was shared with query's head-cutting one.
func TestBucketCellBytesAreStable(t *testing.T) {
	h := sha256.New()
	for c := range 16 {
		fs, hs := goldenBucket(c)
		cell, err := cellenc.BucketCell(fs, hs, 0, time.Hour)
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		fmt.Fprintf(h, "%d:%x;", c, cell.Value)
	}
	if got, want := fmt.Sprintf("%x", h.Sum(nil)), goldenBucketCells; got != want {
		t.Errorf("chunk cells digest %s, want %s", got, want)
	}
}

// goldenBucketCells is the digest the pre-split encoder (schema.BucketCell at
// 516f21b) gives for the 16 buckets.
const goldenBucketCells = "7c5081ebab29c83ae4337eab02d761ed2ee2bbb4d151869606111a5f9a9f656e"
