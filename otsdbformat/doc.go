// Package otsdbformat decodes what OpenTSDB 2.4 keeps in HBase: the row keys
// of its data table (`tsdb`, family `t`), the qualifiers and values of that
// table's columns, and the names of its UID table (`tsdb-uid`). It owns the
// byte layout of those tables and nothing else: pure functions over byte
// slices, no I/O. It must never import kv, a backend, or any package of
// hbtsdb's own layout (schema, cellenc): OpenTSDB's format and hbtsdb's meet
// only in otsdbimport.
//
// It follows OpenTSDB 2.4.1's Java code (net.opentsdb.core.Internal,
// RowKey, RowSeq, CompactionQueue, ColumnDatapointIterator, AppendDataPoints,
// Const; net.opentsdb.uid.UniqueId), whose names the comments cite.
//
// # Row keys
//
//	[salt(SaltWidth)] metric(MetricWidth) baseTime(4) (tagk(TagkWidth) tagv(TagvWidth))*
//
// baseTime is the row's hour in Unix seconds (big-endian, unsigned, a
// multiple of 3600); the tag pairs are sorted by tagk UID. The salt, when
// tsd.storage.salt.width is not 0, is a bucket number in SaltWidth bytes
// (RowKey.getSaltBytes); a row whose metric UID is all zeros is the global
// annotation row, never salted. UIDs are 3 bytes each unless
// tsd.storage.uid.width.{metric,tagk,tagv} say otherwise (Layout).
//
// # Columns
//
// A qualifier of even length holds data points; one of odd length is
// something else, told by its first byte (CompactionQueue
// buildHeapProcessAnnotations): 0x01 an annotation, 0x05 appended data points
// (qualifier 0x05 0x00 0x00, tsd.storage.enable_appends), 0x06 a histogram.
//
//   - 2 bytes: one point in seconds, `offset(12 bits) flags(4)`, offset in
//     seconds from baseTime. Its value's length is what the value is, not
//     what the flags say (Internal.fixQualifierFlags), and a float flagged as
//     4 bytes stored in 8 whose first 4 are zero is the 4 last
//     (Internal.fixFloatingPointValue: early OpenTSDB versions wrote them so).
//   - 4 bytes starting with 0xF: one point in milliseconds,
//     `1111 offset(22 bits) reserved(2) flags(4)`.
//   - otherwise a compacted column: qualifiers of 2 or 4 bytes one after the
//     other, their values one after the other and one meta byte (bit 0: seconds
//     and milliseconds mixed); every value's length is the one its flags give,
//     and they must add up to the value's length minus the meta byte
//     (Internal.extractDataPoints).
//
// Flags: bit 3 set is a float (4 bytes: an IEEE 754 single, 8: a double), clear
// an integer (1, 2, 4 or 8 bytes, big-endian, signed); the low 3 bits are the
// value's length minus one (RowSeq.extractIntegerValue,
// extractFloatingPointValue). Any other length is a corrupt column.
//
// An appended column's value is qualifier-value pairs as above, without a meta
// byte, in the order they were appended: a later pair at an offset replaces an
// earlier one, and the points are sorted by offset (AppendDataPoints
// parseKeyValue).
//
// # Rows
//
// One row may hold several columns of points: single columns written after
// it was compacted, a compacted column beside the single ones a compaction did
// not get to delete, appended points. DecodeRow merges them as OpenTSDB's
// compaction and queries do (CompactionQueue defaultMergeDataPoints): sorted
// by time, one point per millisecond offset, and where two columns hold one,
// the point of the column with the newest HBase cell timestamp. OpenTSDB does
// that with tsd.storage.fix_duplicates=true and fails the query otherwise
// (when the values differ); DecodeRow always keeps the newest and counts the
// points it dropped (RowStats.Duplicates), so that an import never fails on
// what OpenTSDB can repair.
//
// # UIDs
//
// The UID table has, per kind (qualifier "metrics", "tagk" or "tagv"), a row
// per name in family "id" holding its UID and a row per UID in family "name"
// holding its name (UniqueId); names are ISO-8859-1 (UniqueId.CHARSET), one
// byte a character, which Name turns into Go's UTF-8.
package otsdbformat
