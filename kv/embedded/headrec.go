package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Head log records: what one Apply (or Increment, CheckAndPut) changed in the
// head, replayed in order at Open.
//
//	record   = version(1) = 1 | body
//	         = version(1) = 2 | zstd(body)       (compressedHeadRecord)
//	body     = tableID uvarint | count uvarint | op*
//	op       = kind(1) | row | family | body
//	body     = put:           count uvarint | (qualifier | ts varint | value)*
//	         = delete-column: qualifier | upTo varint
//	         = delete-family: upTo varint
//	         = delete-row:    upTo varint        (family empty)
//	row, family, qualifier, value = uvarint length | bytes
//
// Consecutive puts to one row and family are one put op, so a row's key is
// written once per request, not once per sample. Timestamps are varints of the
// difference from the previous put's in the op (the first from 0): samples of
// one row are close in time. The table is named by its id, which is never
// reused, so a record of a dropped table is skipped at replay even if a table
// of the same name exists again.

const (
	headRecordVersion           = 1
	headRecordVersionCompressed = 2
)

// zstd's encoder and decoder: EncodeAll and DecodeAll are safe for concurrent
// use. The fastest level: a remote-write request's record of sorted row keys
// compresses several times even so (BenchmarkIngestRemoteWrite's
// head-log-B/sample).
var (
	headZstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	headZstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
)

// compressedHeadRecord is the record of a batch of valid puts of the table
// with id tableID, compressed: the puts ordered by row and family (stably, so
// that of two puts of one cell the later still wins), so that each row's key
// is written once and neighbouring keys, which share most of their bytes,
// compress well.
func compressedHeadRecord(tableID uint64, puts []kv.Mutation) []byte {
	sorted := slices.Clone(puts)
	slices.SortStableFunc(sorted, func(a, b kv.Mutation) int {
		if c := bytes.Compare(a.Row, b.Row); c != 0 {
			return c
		}
		return strings.Compare(a.Family, b.Family)
	})
	body := encodeHeadOps(nil, tableID, sorted)[1:]
	return headZstdEncoder.EncodeAll(body, []byte{headRecordVersionCompressed})
}

var errBadHeadRecord = errors.New("malformed head log record")

// encodeHeadOps appends the record of mutations (all valid, of the table
// with id tableID) to dst.
func encodeHeadOps(dst []byte, tableID uint64, mutations []kv.Mutation) []byte {
	ops := 0
	for i := 0; i < len(mutations); i = opEnd(mutations, i) {
		ops++
	}
	dst = append(dst, headRecordVersion)
	dst = binary.AppendUvarint(dst, tableID)
	dst = binary.AppendUvarint(dst, uint64(ops))
	for i := 0; i < len(mutations); {
		m, j := mutations[i], opEnd(mutations, i)
		dst = append(dst, byte(m.Kind))
		dst = appendBytes(dst, m.Row)
		dst = appendBytes(dst, []byte(m.Family))
		switch m.Kind {
		case kv.KindPut:
			dst = binary.AppendUvarint(dst, uint64(j-i))
			prev := int64(0)
			for _, p := range mutations[i:j] {
				dst = appendBytes(dst, p.Qualifier)
				dst = binary.AppendVarint(dst, p.Timestamp-prev)
				prev = p.Timestamp
				dst = appendBytes(dst, p.Value)
			}
		case kv.KindDeleteColumn:
			dst = appendBytes(dst, m.Qualifier)
			dst = binary.AppendVarint(dst, m.Timestamp)
		default:
			dst = binary.AppendVarint(dst, m.Timestamp)
		}
		i = j
	}
	return dst
}

// opEnd is the end of the op that starts at mutations[i]: past the run of puts
// to the same row and family, or i+1.
func opEnd(mutations []kv.Mutation, i int) int {
	m := mutations[i]
	j := i + 1
	if m.Kind != kv.KindPut {
		return j
	}
	for j < len(mutations) && mutations[j].Kind == kv.KindPut &&
		string(mutations[j].Row) == string(m.Row) && mutations[j].Family == m.Family {
		j++
	}
	return j
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// decodeHeadOps decodes a record into its table id and mutations, whose
// byte slices alias rec.
func decodeHeadOps(rec []byte) (tableID uint64, mutations []kv.Mutation, err error) {
	if len(rec) > 0 && rec[0] == headRecordVersionCompressed {
		body, err := headZstdDecoder.DecodeAll(rec[1:], []byte{headRecordVersion})
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %w", errBadHeadRecord, err)
		}
		rec = body
	}
	d := recDecoder{b: rec}
	if v := d.byte(); v != headRecordVersion {
		return 0, nil, fmt.Errorf("%w: version %d, want %d or %d", errBadHeadRecord, v, headRecordVersion, headRecordVersionCompressed)
	}
	tableID = d.uvarint()
	ops := d.uvarint()
	for range ops {
		if d.err != nil {
			break
		}
		kind := kv.MutationKind(d.byte())
		row := d.bytes()
		family := string(d.bytes())
		switch kind {
		case kv.KindPut:
			n := d.uvarint()
			if n > uint64(len(d.b)) {
				d.fail()
				break
			}
			prev := int64(0)
			for range n {
				q := d.bytes()
				ts := prev + d.varint()
				prev = ts
				mutations = append(mutations, kv.Put(row, family, q, ts, d.bytes()))
			}
		case kv.KindDeleteColumn:
			q := d.bytes()
			mutations = append(mutations, kv.DeleteColumn(row, family, q, d.varint()))
		case kv.KindDeleteFamily:
			mutations = append(mutations, kv.DeleteFamily(row, family, d.varint()))
		case kv.KindDeleteRow:
			mutations = append(mutations, kv.DeleteRow(row, d.varint()))
		default:
			return 0, nil, fmt.Errorf("%w: unknown mutation kind %d", errBadHeadRecord, kind)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes", errBadHeadRecord, len(d.b))
	}
	if d.err != nil {
		return 0, nil, d.err
	}
	for _, m := range mutations {
		if err := m.Validate(); err != nil {
			return 0, nil, fmt.Errorf("%w: %w", errBadHeadRecord, err)
		}
	}
	return tableID, mutations, nil
}

// recDecoder reads a record; its first error sticks, and reads after it
// return zero values.
type recDecoder struct {
	b   []byte
	err error
}

func (d *recDecoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated", errBadHeadRecord)
	}
	d.b = nil
}

func (d *recDecoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *recDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDecoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}
