// Package importer loads existing data into an hbtsdb store: OpenMetrics text
// files with timestamps (what `promtool tsdb create-blocks-from openmetrics`
// takes) or Prometheus text format files, parsed with Prometheus'
// model/textparse (ImportFile), and the series
// any Prometheus remote-read endpoint returns for a set of selectors and a time
// range, read in time slices as streamed XOR chunks, several at once
// (ImportRemoteRead).
//
// Everything is written through a Sink, which in tsdb import is the db.DB that
// tsdb serve's remote write goes through: the same validation, series
// registry, tag index, late-cell marking (old samples are late cells with late
// pending marks, so the compaction worker folds them into chunks and rollups
// like any late data) and the same idempotence (a cell is addressed by series,
// bucket and offset, its timestamp comes from the sample, so importing a
// sample twice rewrites one cell).
//
// # Resuming
//
// A Checkpoint (a small JSON file, replaced atomically) records what is
// durably written: for a file, the byte offset before which every sample is
// stored; for a remote-read import, the slices that are done. A checkpoint
// advances only after the Sink acknowledged the writes it covers, so an import
// killed at any moment and started again with the same checkpoint skips what
// is done and writes the rest; what was written after the last checkpoint is
// written again, onto the same cells.
//
// # Bounds
//
// Memory is bounded by Options.Concurrency batches of Options.BatchSamples
// samples in flight, plus one entry per distinct series for the summary's
// count. A file is memory-mapped (read whole where mmap is not available), so
// the kernel pages it in and out. A remote-read slice is streamed: its frames
// are decoded as they arrive and written in batches.
//
// # Imports
//
// importer depends on write (the request type), Prometheus' textparse, remote
// and prompb, and nothing of the store: it must never import kv, db, query or
// a backend.
package importer
