// Package schema owns hbtsdb's keys, tables and settings: the names of tables and
// column families, the codecs of row keys and qualifiers, and the schema meta row
// that records the settings a store was created with. Everything that knows how a
// byte of a key is arranged, or at which row and qualifier a cell lives, is here,
// so that write/, query/, index/ and compact/ agree by construction. The cell
// values (raw samples, native histograms, chunks, rollup windows, exemplars) and
// their byte formats are package cellenc's, which imports this one; schema never
// imports cellenc.
//
// The package is pure functions and the few small values of the meta table they
// encode (Settings, Metadata, leases, watermarks), fuzzed (fuzz_test.go); it does
// no I/O. Creating, checking and opening a store's schema (the meta row protocol)
// is schema/provision's. It imports only the standard library, Prometheus' model
// types and kv/ (for Cell and TableSpec); it must never import a backend
// (kv/hbase, kv/embedded, gohbase, Pebble), cellenc or a package above it.
//
// # Tables
//
// Logical names (kv/hbase adds its prefix: tsdb-data, ...):
//
//	data    row = salt | esc(host) 0x00 | esc(metric) 0x00 | seriesID(8) | ^bucketStart(8)
//	        r: raw samples   qualifier = offset(4) in the bucket, value = float64 bits(8)
//	                         or a native histogram (cellenc/raw.go, cellenc/histogram.go)
//	        c: chunks        qualifier = offset(4) = 0, value = a sealed bucket,
//	                         compressed (cellenc/chunk.go; written by compaction)
//	        t: tags          qualifier = label name, value = label value
//	series  0x00 "next-id"            i:next = highest series ID handed out
//	        0x01 | canonical labels   i:id   = seriesID(8)
//	        0x02 | seriesID(8)        l:l    = canonical labels
//	index   row = day(4) | esc(name) 0x00 | esc(value) 0x00, p:<seriesID(8)> = empty
//	meta    row "schema": m:format_version, m:bucket_width_ms, m:salt_buckets, m:host_labels, m:claim,
//	        m:rollups (the resolution list, e.g. "5m:90d,1h:5y"), m:raw_retention, m:exemplar_retention
//	        row "metadata" 0x00 metric: m:type, m:help, m:unit (metric metadata)
//	        row "lease" 0x00 job 0x00 salt(1): m:lease = "owner expiryMs" (worker leases)
//	exemplars row = as data (the exemplar's bucket), TTL = the exemplar retention
//	        e: exemplars     qualifier = slotOffset(4) | index(1), value = flags | ts | value bits | labels (cellenc/exemplar.go)
//	rollup-<resolution>  one table per resolution of the list (rollup-5m, rollup-1h), TTL = its retention
//	        row = as data, bucketStart = the UTC day    a:<offset(4) of the data bucket> = its windows (cellenc/rollupcell.go)
//
// All integers are big-endian, so that byte order is numeric order. Variable-length
// strings inside keys are escaped and terminated (escape.go) so that keys sort as
// the tuples they encode and a prefix never matches a longer host, metric or label.
// Each file states the invariants of its layout next to the code that keeps them:
// escape.go (escaping and why it preserves order), datakey.go (data rows), raw.go
// (raw sample qualifiers), chunk.go (chunk qualifiers), late.go (late cells),
// pending.go (the compaction queue), index.go (tag index), series.go (series
// registry), tables.go (table and family specs), settings.go (the meta row's
// settings), metadata.go (metric metadata), lease.go (worker leases), watermark.go
// (job watermarks), rollup.go (the resolution list, rollup tables and where a
// bucket's rollup cell lies in its row) and exemplar.go (the exemplar table, its
// qualifiers and per-series bound).
//
// # Conventions
//
// Encoders are append-style, as strconv.AppendInt: they append to dst and return the
// extended slice, allocating nothing when dst has room, because the write path
// builds a row key and a qualifier for every sample. Decoders accept exactly
// what the encoders write and nothing else, so that a decoded value re-encodes to
// the same bytes; on anything else they return an error wrapping ErrMalformed.
// Timestamps are milliseconds since the Unix epoch, as everywhere in hbtsdb.
//
// # Settings
//
// A store's layout depends on settings (Settings) fixed when it is created: the
// format version, the bucket width [1h], the number of salts [16 on HBase,
// 1 embedded] and the host labels [host, instance], whose first present value is the
// host part of the data row keys (HostOf). They live in the meta row and never
// change silently: provision's Open, Check and Create refuse a process configured
// differently, naming both values (CompareSettings, ErrMismatch).
// Table options (TableOptions: retentions, compression) are applied when the tables
// are created and are not recorded, except the resolution list (TableOptions.Rollups,
// m:rollups): it may change, a resolution added being a table created and one removed
// a table no longer written (kept until an operator drops it); a resolution's
// retention is its table's TTL, fixed when the table is created (schema/provision
// refuses to change it and says how to in the HBase shell).
package schema
