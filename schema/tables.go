package schema

import (
	"fmt"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Logical table names. kv/hbase maps them to physical names with its prefix
// (tsdb-data, ...); the embedded store uses them as they are.
const (
	// TableData holds one row per (series, time bucket): raw samples, chunks and
	// promoted tags.
	TableData = "data"
	// TableSeries is the series registry: labels <-> series ID.
	TableSeries = "series"
	// TableIndex is the tag index: per day, label pair -> series IDs.
	TableIndex = "index"
	// TableMeta holds the schema meta row, metric metadata and the compaction
	// worker's leases (lease.go).
	TableMeta = "meta"
)

// Column families.
const (
	// FamilyRaw (data table): raw samples, see raw.go.
	FamilyRaw = "r"
	// FamilyChunk (data table): a sealed bucket as compressed chunks, see chunk.go;
	// written by compaction (compact/), read where present.
	FamilyChunk = "c"
	// FamilyTags (data table): the series' labels promoted to columns; qualifier =
	// label name, value = label value, so a ColumnValueFilter can select rows by tag.
	FamilyTags = "t"
	// FamilyPostings (index table): qualifier = series ID, see index.go.
	FamilyPostings = "p"
	// FamilyMeta (meta table): everything of the meta table, see meta.go.
	FamilyMeta = "m"
)

// Defaults of TableOptions.
const (
	DefaultRawRetention = 400 * 24 * time.Hour
	DefaultCompression  = "NONE"
	// DefaultBlockEncoding is used for the data, index and rollup tables, whose
	// keys share long prefixes.
	DefaultBlockEncoding = "FAST_DIFF"
	DefaultBloomFilter   = "ROW"
	// DefaultInMemoryCompaction is every family's IN_MEMORY_COMPACTION on
	// HBase: BASIC flattens a region's memstore segments into arrays in memory
	// before they are flushed, which cost the region server less CPU per
	// sample than its default skip list (docs/performance.md, "HBase: cheaper
	// cells").
	DefaultInMemoryCompaction = "BASIC"
)

// TableOptions are the table settings fixed when the tables are created (HBase has
// no ModifyTable through gohbase, so changing them later is an operator's job in the
// HBase shell). Start from DefaultTableOptions. Retentions are whole numbers of
// seconds (HBase's unit of TTL); a zero retention keeps data forever.
type TableOptions struct {
	// RawRetention is the TTL of the data table's families [400 days]. The index
	// keeps entries one day longer, so that a posting outlives its day's samples.
	RawRetention time.Duration
	// ExemplarRetention is the TTL of the exemplar table's family, counted from
	// each exemplar's timestamp (exemplar.go) [DefaultExemplarRetention, 30 days].
	ExemplarRetention time.Duration
	// Rollups are the resolutions of downsampled data and their retentions, one
	// table each (rollup.go) [DefaultRollups: 5m:90d,1h:5y].
	Rollups []Rollup
	// Compression of HBase store files: NONE, SNAPPY, GZ, LZ4, ZSTD ["NONE", which
	// needs no native codec on the region servers; "" means the same]. The embedded
	// store ignores it.
	Compression string
	// Salts is the number of salts, which must equal the schema
	// setting: the data and rollup tables are pre-split into this many regions, one
	// per salt byte [DefaultSaltsHBase].
	Salts int
}

// DefaultTableOptions returns the documented defaults, with Salts set to
// DefaultSaltsHBase; the embedded store uses DefaultSaltsEmbedded.
func DefaultTableOptions() TableOptions {
	return TableOptions{
		RawRetention:      DefaultRawRetention,
		ExemplarRetention: DefaultExemplarRetention,
		Rollups:           DefaultRollups(),
		Compression:       DefaultCompression,
		Salts:             DefaultSaltsHBase,
	}
}

// Validate reports what is wrong with the options, wrapping kv.ErrInvalidArgument.
func (o TableOptions) Validate() error {
	if o.RawRetention < 0 || o.RawRetention%time.Second != 0 {
		// HBase counts TTL in whole seconds (kv.FamilySpec).
		return fmt.Errorf("schema: raw retention %s is negative or not a whole number of seconds: %w", o.RawRetention, kv.ErrInvalidArgument)
	}
	if o.ExemplarRetention < 0 || o.ExemplarRetention%time.Second != 0 {
		return fmt.Errorf("schema: exemplar retention %s is negative or not a whole number of seconds: %w", o.ExemplarRetention, kv.ErrInvalidArgument)
	}
	// The bucket width is checked with the settings; here only what needs none.
	if err := ValidateRollups(o.Rollups, 0); err != nil {
		return fmt.Errorf("%w: %w", err, kv.ErrInvalidArgument)
	}
	if o.Salts < 1 || o.Salts > MaxSalts {
		return fmt.Errorf("schema: salts %d outside [1, %d]: %w", o.Salts, MaxSalts, kv.ErrInvalidArgument)
	}
	return nil
}

// Tables returns the specs of every table of the schema, in the order they are
// created: data, series, index, meta, exemplars, pending, then one rollup table per
// resolution (the rollup tables are always last). Every family keeps one version; TTLs
// come from o (the series registry and the meta table never expire). The data,
// exemplar and rollup tables are pre-split at the salt bytes 1 .. Salts-1 so that every salt
// starts in its own region; with one salt they are not split. o should pass
// Validate; Tables clamps Salts into [1, MaxSalts].
func Tables(o TableOptions) []kv.TableSpec {
	compression := o.Compression
	if compression == "" {
		compression = DefaultCompression
	}
	fam := func(name string, ttl time.Duration, blockEncoding string) kv.FamilySpec {
		return kv.FamilySpec{
			Name:          name,
			MaxVersions:   1,
			TTL:           ttl,
			Compression:   compression,
			BlockEncoding: blockEncoding,
			BloomFilter:   DefaultBloomFilter,
			// Set when the table is created; an existing table keeps its own.
			InMemoryCompaction: DefaultInMemoryCompaction,
		}
	}
	indexTTL := o.IndexRetention()
	tables := []kv.TableSpec{
		{
			Name: TableData,
			Families: []kv.FamilySpec{
				fam(FamilyRaw, o.RawRetention, DefaultBlockEncoding),
				fam(FamilyChunk, o.RawRetention, DefaultBlockEncoding),
				fam(FamilyTags, o.RawRetention, DefaultBlockEncoding),
			},
			SplitKeys: saltSplitKeys(o.Salts),
		},
		{
			Name: TableSeries,
			Families: []kv.FamilySpec{
				fam(FamilySeriesID, 0, "NONE"),
				fam(FamilySeriesLabels, 0, "NONE"),
			},
		},
		{
			Name:     TableIndex,
			Families: []kv.FamilySpec{fam(FamilyPostings, indexTTL, DefaultBlockEncoding)},
		},
		{
			Name:     TableMeta,
			Families: []kv.FamilySpec{fam(FamilyMeta, 0, "NONE")},
		},
		ExemplarTable(o),
		PendingTable(o),
	}
	for _, r := range o.Rollups {
		tables = append(tables, kv.TableSpec{
			Name:      RollupTable(r.Resolution),
			Families:  []kv.FamilySpec{fam(FamilyRollup, r.Retention, DefaultBlockEncoding)},
			SplitKeys: saltSplitKeys(o.Salts),
		})
	}
	return tables
}

// Transient reports whether the cells of family of table (logical names) live
// only until compaction rewrites their bucket, an hour or two after they are
// written: raw samples (FamilyRaw of TableData) and pending marks. An embedded
// store keeps them in memory behind a log of their own (its head) rather than
// in its files, so that writing and deleting them costs no key and no
// tombstone there.
func Transient(table, family string) bool {
	return table == TableData && family == FamilyRaw || table == TablePending && family == FamilyPending
}

// ExemplarTable returns the spec of the exemplar table (exemplar.go): family
// FamilyExemplars with TTL o.ExemplarRetention, one version, pre-split like the
// data table, whose row keys it shares.
func ExemplarTable(o TableOptions) kv.TableSpec {
	return saltedTable(o, TableExemplars, FamilyExemplars, o.ExemplarRetention)
}

// saltedTable is the spec of a table of one family (one version, ttl, the
// data table's block encoding and bloom filter), pre-split like the data table.
func saltedTable(o TableOptions, name, family string, ttl time.Duration) kv.TableSpec {
	compression := o.Compression
	if compression == "" {
		compression = DefaultCompression
	}
	return kv.TableSpec{
		Name: name,
		Families: []kv.FamilySpec{{
			Name:          family,
			MaxVersions:   1,
			TTL:           ttl,
			Compression:   compression,
			BlockEncoding: DefaultBlockEncoding,
			BloomFilter:   DefaultBloomFilter,
			// Set when the table is created; an existing table keeps its own.
			InMemoryCompaction: DefaultInMemoryCompaction,
		}},
		SplitKeys: saltSplitKeys(o.Salts),
	}
}

// IndexRetention is the TTL of the tag index: a day longer than the longest
// retention of raw data and rollups, so that a series stays findable as long as
// any of its data is kept; 0 (forever) when any of them is kept forever.
func (o TableOptions) IndexRetention() time.Duration {
	longest := o.RawRetention
	for _, r := range o.Rollups {
		if longest == 0 || r.Retention == 0 {
			return 0
		}
		longest = max(longest, r.Retention)
	}
	if longest == 0 {
		return 0
	}
	return longest + 24*time.Hour
}

// saltSplitKeys returns {1}, {2}, ..., {buckets-1}: region i starts at salt byte i.
func saltSplitKeys(buckets int) [][]byte {
	buckets = min(max(buckets, 1), MaxSalts)
	if buckets == 1 {
		return nil
	}
	keys := make([][]byte, buckets-1)
	for i := range keys {
		keys[i] = []byte{byte(i + 1)}
	}
	return keys
}
