package cellenc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
)

// Exemplar values: the value of a cell of the exemplar table (schema/exemplar.go
// has the table, row and qualifier layout).
//
//	value = flags(1) | ts(8) | value(8) | labels
//
// flags bit 0 is Exemplar.HasTs, the other bits are 0; ts is the exemplar's
// timestamp (int64, big-endian; equal to the cell timestamp), value its float64
// bits (big-endian, so NaN payloads survive); labels are uvarint(count) then,
// per label in labels.Labels order, uvarint(len) name uvarint(len) value.

// exemplarFixedLen is flags(1) | ts(8) | value(8).
const exemplarFixedLen = 17

// exemplarFlagHasTs is Exemplar.HasTs in the flags byte.
const exemplarFlagHasTs = 0x01

// ExemplarValueLen is the length of the value AppendExemplarValue writes for e.
func ExemplarValueLen(e exemplar.Exemplar) int {
	n := exemplarFixedLen + exemplarUvarintLen(uint64(e.Labels.Len()))
	e.Labels.Range(func(l labels.Label) {
		n += exemplarUvarintLen(uint64(len(l.Name))) + len(l.Name) + exemplarUvarintLen(uint64(len(l.Value))) + len(l.Value)
	})
	return n
}

// AppendExemplarValue appends the cell value of e to dst: flags, timestamp,
// value bits and labels, bit-exact.
func AppendExemplarValue(dst []byte, e exemplar.Exemplar) []byte {
	var flags byte
	if e.HasTs {
		flags |= exemplarFlagHasTs
	}
	dst = append(dst, flags)
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.Ts))
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(e.Value))
	dst = binary.AppendUvarint(dst, uint64(e.Labels.Len()))
	e.Labels.Range(func(l labels.Label) {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	})
	return dst
}

// DecodeExemplarValue decodes an exemplar cell value. It fails, wrapping
// ErrMalformed, on a value shorter than its fixed part, unknown flag bits, a
// label count or length that overruns the value, trailing bytes, or label
// names that are empty, unsorted or repeated (AppendExemplarValue writes
// labels.Labels, sorted and unique).
func DecodeExemplarValue(b []byte) (exemplar.Exemplar, error) {
	var e exemplar.Exemplar
	if len(b) < exemplarFixedLen+1 {
		return e, fmt.Errorf("cellenc: exemplar value of %d bytes is too short: %w", len(b), ErrMalformed)
	}
	if b[0]&^exemplarFlagHasTs != 0 {
		return e, fmt.Errorf("cellenc: exemplar value flags %#02x has unknown bits: %w", b[0], ErrMalformed)
	}
	e.HasTs = b[0]&exemplarFlagHasTs != 0
	e.Ts = int64(binary.BigEndian.Uint64(b[1:]))
	e.Value = math.Float64frombits(binary.BigEndian.Uint64(b[9:]))
	rest := b[exemplarFixedLen:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return e, fmt.Errorf("cellenc: exemplar value label count: %w", ErrMalformed)
	}
	rest = rest[k:]
	sb := labels.NewScratchBuilder(int(n))
	prev := ""
	for i := uint64(0); i < n; i++ {
		var name, value string
		var err error
		if name, rest, err = exemplarString(rest); err != nil {
			return e, fmt.Errorf("cellenc: exemplar value label %d name: %w", i, err)
		}
		if value, rest, err = exemplarString(rest); err != nil {
			return e, fmt.Errorf("cellenc: exemplar value label %d value: %w", i, err)
		}
		if name == "" || (i > 0 && name <= prev) {
			return e, fmt.Errorf("cellenc: exemplar value label %d name %q is empty, unsorted or repeated: %w", i, name, ErrMalformed)
		}
		prev = name
		sb.Add(name, value)
	}
	if len(rest) != 0 {
		return e, fmt.Errorf("cellenc: exemplar value has %d trailing bytes: %w", len(rest), ErrMalformed)
	}
	e.Labels = sb.Labels()
	return e, nil
}

// exemplarString reads a uvarint length and that many bytes.
func exemplarString(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", b, fmt.Errorf("length overruns the value: %w", ErrMalformed)
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}

// exemplarUvarintLen is the length of x as a uvarint.
func exemplarUvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
