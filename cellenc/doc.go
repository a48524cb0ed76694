// Package cellenc owns the byte format of hbtsdb's cell values: what a raw, chunk,
// rollup or exemplar cell's value holds and how it is encoded and decoded, and the
// one decoder of a data row's samples. "Where is the byte format? In package
// cellenc." — as Prometheus' tsdb/chunkenc beside tsdb/index. The keys, tables,
// families and qualifiers those cells live at, and the store's settings, are
// package schema's; cellenc imports schema for them (families, a data row's
// bucket start, qualifier offsets, late-cell timestamps) and schema never imports
// cellenc.
//
// The package is pure functions and the value types they encode (Sample,
// HistogramSample, RollupWindow), fuzzed (fuzz_test.go, testdata/fuzz/); it does
// no I/O. It imports only the standard library, Prometheus' model types and chunk
// encodings (tsdb/chunkenc), kv/ (for Cell and Row) and schema/; it must never
// import a backend or a package above it.
//
// # Cells and where each layout is written down
//
//	sample.go       Sample and HistogramSample, the unit every read and write
//	                path shares
//	raw.go          a raw cell's float value: bits(8), or st(8) | bits(8) with a
//	                start timestamp
//	histogram.go    a raw cell's native histogram value: kind | hint | [st] |
//	                schema | zero threshold | counts | sum | spans | buckets |
//	                custom values
//	chunk.go        a chunk cell's value: encoding(1) | data, one Prometheus
//	                chunk, a decimal chunk or several (EncChunks), what a chunk
//	                keeps of its samples; the container codec
//	chunkdecode.go  decoding one chunk of a cell, checked
//	chunkencode.go  the one chunk encoder (ChunkEncoder) and its two cut
//	                policies: compaction's (CutCompaction) and Prometheus'
//	                head's (CutHead, query's chunks for remote read)
//	bucketcell.go   what compaction writes for a bucket (BucketCell)
//	decimal.go      the decimal chunk of floats (EncDecimal)
//	datarow.go      DecodeDataRow, the one decoder of a data row, into the one
//	                decoded-row type (RowSamples): its chunk and raw cells merged
//	window.go       rollup windows (RollupWindow) and their arithmetic: WindowEnd,
//	                AggregateWindows, Merge, SumsExact, the counter fields
//	rollupcell.go   a rollup cell's value: the windows of one data bucket
//	                (EncodeRollupWindows, DecodeRollupWindows), void cells
//	exemplar.go     an exemplar cell's value: flags | ts | value bits | labels
//	errors.go       ErrMalformed (schema's)
//
// # Conventions
//
// Encoders are append-style, as strconv.AppendInt: they append to dst and return
// the extended slice. Decoders accept exactly what the encoders write and nothing
// else, so that a decoded value re-encodes to the same bytes; on anything else
// they return an error wrapping ErrMalformed (schema.ErrMalformed). Every float is
// stored as its bit pattern, so NaN payloads (Prometheus' stale marker) and -0
// survive. Timestamps are milliseconds since the Unix epoch. The formats never
// change silently: a reader of today reads every cell written before.
package cellenc
