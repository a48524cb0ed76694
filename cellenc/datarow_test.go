package cellenc_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/value"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// dataRow builds a data row of bucket bucketStart from chunk cells, one per
// element of chunks (a chunk as compaction writes it, or as an older layout or a
// rewrite in progress may leave several), and raw cells holding raw.
func dataRow(t *testing.T, bucketStart int64, chunks [][]cellenc.Sample, raw []cellenc.Sample) kv.Row {
	t.Helper()
	const width = time.Hour
	var cells []kv.Cell
	for _, samples := range chunks {
		c, err := cellenc.BucketChunkCell(samples, bucketStart, width)
		if err != nil {
			t.Fatal(err)
		}
		cells = append(cells, c)
	}
	for _, s := range raw {
		q, err := schema.AppendRawQualifier(nil, s.T-bucketStart, width)
		if err != nil {
			t.Fatal(err)
		}
		cells = append(cells, kv.Cell{Family: schema.FamilyRaw, Qualifier: q, Timestamp: s.T, Value: cellenc.AppendRawValue(nil, s.V)})
	}
	key := schema.DataRowKey(nil, schema.DataKey{Host: "h", Metric: "m", SeriesID: 7, BucketStart: bucketStart})
	return kv.Row{Key: key, Cells: cells}
}

func sameBits(a, b []cellenc.Sample) bool {
	return slices.EqualFunc(a, b, func(x, y cellenc.Sample) bool {
		return x.T == y.T && math.Float64bits(x.V) == math.Float64bits(y.V)
	})
}

func TestDecodeDataRow(t *testing.T) {
	const b0 = 7_200_000 // a bucket start (2h)
	stale := math.Float64frombits(value.StaleNaN)
	var many []cellenc.Sample
	for i := range 200 { // 50 minutes at 15s: one bucket
		many = append(many, cellenc.Sample{T: b0 + int64(i)*15_000, V: float64(i%7) * 1.5})
	}
	many[100].V = stale
	for _, tc := range []struct {
		name        string
		chunks      [][]cellenc.Sample
		raw         []cellenc.Sample
		mint, maxt  int64
		want        []cellenc.Sample
		wantChunk   bool
		chunkCells  int
		rawCellsAll int
	}{
		{name: "raw cells only", raw: many[:3], mint: 0, maxt: math.MaxInt64, want: many[:3], rawCellsAll: 3},
		{name: "one chunk, wholly in range, is handed out", chunks: [][]cellenc.Sample{many[:120]}, mint: 0, maxt: math.MaxInt64,
			want: many[:120], wantChunk: true, chunkCells: 1},
		{name: "a whole bucket in one chunk, stale marker bits kept", chunks: [][]cellenc.Sample{many}, mint: 0, maxt: math.MaxInt64,
			want: many, wantChunk: true, chunkCells: 1},
		{name: "overlapping chunks: one sample per timestamp, the later cell's", chunks: [][]cellenc.Sample{many[:10], {{T: many[5].T, V: -5}}},
			mint: 0, maxt: math.MaxInt64, want: append(append(slices.Clone(many[:5]), cellenc.Sample{T: many[5].T, V: -5}), many[6:10]...), chunkCells: 2},
		{name: "a chunk cut by the range is not handed out", chunks: [][]cellenc.Sample{many[:120]}, mint: many[10].T, maxt: many[20].T,
			want: many[10:21], chunkCells: 1},
		{name: "a late raw sample between chunk samples is merged in order", chunks: [][]cellenc.Sample{many[:4]},
			raw: []cellenc.Sample{{T: many[1].T + 1, V: 42}}, mint: 0, maxt: math.MaxInt64,
			want: []cellenc.Sample{many[0], many[1], {T: many[1].T + 1, V: 42}, many[2], many[3]}, chunkCells: 1, rawCellsAll: 1},
		{name: "a raw sample wins over the chunk's of the same timestamp", chunks: [][]cellenc.Sample{many[:4]},
			raw: []cellenc.Sample{{T: many[2].T, V: -1}}, mint: 0, maxt: math.MaxInt64,
			want: []cellenc.Sample{many[0], many[1], {T: many[2].T, V: -1}, many[3]}, chunkCells: 1, rawCellsAll: 1},
		{name: "raw cells outside the range are counted, not returned", raw: many[:5], mint: many[1].T, maxt: many[2].T,
			want: many[1:3], rawCellsAll: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := dataRow(t, b0, tc.chunks, tc.raw)
			got, err := cellenc.DecodeDataRow(row, time.Hour, tc.mint, tc.maxt)
			if err != nil {
				t.Fatal(err)
			}
			if got.BucketStart != b0 || !sameBits(got.Samples, tc.want) {
				t.Errorf("DecodeDataRow = bucket %d, %v; want bucket %d, %v", got.BucketStart, got.Samples, b0, tc.want)
			}
			if (got.Chunk != nil) != tc.wantChunk {
				t.Errorf("Chunk handed out = %v, want %v", got.Chunk != nil, tc.wantChunk)
			}
			if got.ChunkCells != tc.chunkCells || got.RawCells != tc.rawCellsAll {
				t.Errorf("cells counted: %d chunk, %d raw; want %d, %d", got.ChunkCells, got.RawCells, tc.chunkCells, tc.rawCellsAll)
			}
		})
	}
}

func TestDecodeDataRowRefusesMalformedCells(t *testing.T) {
	row := dataRow(t, 0, nil, []cellenc.Sample{{T: 5, V: 1}})
	row.Cells[0].Timestamp = 6 // not the qualifier's timestamp
	if _, err := cellenc.DecodeDataRow(row, time.Hour, 0, math.MaxInt64); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("raw cell with a foreign timestamp: %v, want ErrMalformed", err)
	}
	row = dataRow(t, 0, nil, nil)
	row.Cells = []kv.Cell{{Family: schema.FamilyChunk, Qualifier: []byte{0, 0, 0, 0}, Timestamp: 1, Value: []byte{9, 1, 2}}}
	if _, err := cellenc.DecodeDataRow(row, time.Hour, 0, math.MaxInt64); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("chunk of an unknown encoding: %v, want ErrMalformed", err)
	}
}

func TestBucketChunkCell(t *testing.T) {
	const hour = 3_600_000
	for _, tc := range []struct {
		name    string
		samples []cellenc.Sample
	}{
		{"no samples", nil},
		{"descending samples", []cellenc.Sample{{T: hour + 2}, {T: hour + 1}}},
		{"a sample before the bucket", []cellenc.Sample{{T: hour - 1}}},
		{"a sample after the bucket", []cellenc.Sample{{T: hour + 1}, {T: 2 * hour}}},
		{"more samples than a chunk counts", make([]cellenc.Sample, cellenc.MaxChunkSamples+1)},
	} {
		if _, err := cellenc.BucketChunkCell(tc.samples, hour, time.Hour); !errors.Is(err, kv.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	c, err := cellenc.BucketChunkCell([]cellenc.Sample{{T: hour + 10, V: 1}, {T: hour + 20, V: 2}}, hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Rewritten in place: always qualifier 0 and the bucket's last millisecond.
	if off, _ := schema.DecodeRawQualifier(c.Qualifier, time.Hour); off != 0 || c.Timestamp != 2*hour-1 || c.Family != schema.FamilyChunk {
		t.Errorf("cell = family %q offset %d timestamp %d; want c, 0, %d", c.Family, off, c.Timestamp, 2*hour-1)
	}
}
