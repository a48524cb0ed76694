package embedded

import (
	"github.com/hbtsdb/hbtsdb/kv"

	"bytes"
	"encoding/binary"
	"errors"
)

// Key-space prefixes; see the package doc for the layout.
const (
	nsMeta    byte = 0x00
	nsCatalog byte = 0x01
	nsData    byte = 0x02
)

// Escaping of a key component: 0x00 -> 0x00 0xFF, then the terminator 0x00 0x01.
// The terminator sorts below every escaped byte that can follow a component's
// content (0x00 0xFF, or any byte >= 0x01), which is what keeps the order.
const (
	escByte  byte = 0x00
	escZero  byte = 0xFF
	escEnd   byte = 0x01
	tsLen         = 8
	idLen         = 8
	tablePfx      = 1 + idLen
)

var errCorruptKey = errors.New("corrupt cell key")

func metaKey(name string) []byte {
	return append([]byte{nsMeta}, name...)
}

func catalogKey(table string) []byte {
	return append([]byte{nsCatalog}, table...)
}

// tablePrefix is the prefix of every cell key of the table with the given id.
func tablePrefix(id uint64) []byte {
	k := make([]byte, tablePfx)
	k[0] = nsData
	binary.BigEndian.PutUint64(k[1:], id)
	return k
}

// appendEscaped appends esc(b): b with 0x00 escaped, then the terminator.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, escByte)
		if i < 0 {
			dst = append(dst, b...)
			break
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, escZero)
		b = b[i+1:]
	}
	return append(dst, escByte, escEnd)
}

// readEscaped decodes one escaped component at the start of b. It returns the
// component and the bytes after its terminator. The component is a sub-slice of b
// when it contains no 0x00, else it is appended to scratch (which may be nil).
func readEscaped(b, scratch []byte) (comp, rest []byte, err error) {
	i := bytes.IndexByte(b, escByte)
	if i < 0 || i+1 >= len(b) {
		return nil, nil, errCorruptKey
	}
	if b[i+1] == escEnd {
		return b[:i], b[i+2:], nil
	}
	// Slow path: the component contains 0x00 bytes.
	start := len(scratch)
	out := scratch
	for {
		if i < 0 || i+1 >= len(b) {
			return nil, nil, errCorruptKey
		}
		out = append(out, b[:i]...)
		switch b[i+1] {
		case escEnd:
			return out[start:], b[i+2:], nil
		case escZero:
			out = append(out, escByte)
			b = b[i+2:]
			i = bytes.IndexByte(b, escByte)
		default:
			return nil, nil, errCorruptKey
		}
	}
}

// escapedLen returns the length of the escaped component at the start of b,
// terminator included.
func escapedLen(b []byte) (int, error) {
	n := 0
	for {
		i := bytes.IndexByte(b[n:], escByte)
		if i < 0 || n+i+1 >= len(b) {
			return 0, errCorruptKey
		}
		n += i + 2
		switch b[n-1] {
		case escEnd:
			return n, nil
		case escZero:
		default:
			return 0, errCorruptKey
		}
	}
}

// rowPrefix returns tablePrefix|esc(row): the prefix of every key of the row.
func rowPrefix(tp, row []byte) []byte {
	k := make([]byte, 0, len(tp)+len(row)+2)
	k = append(k, tp...)
	return appendEscaped(k, row)
}

// appendColumn appends esc(family)|esc(qualifier).
func appendColumn(dst []byte, family string, qualifier []byte) []byte {
	dst = appendEscaped(dst, []byte(family))
	return appendEscaped(dst, qualifier)
}

// appendTimestamp appends ^ts, big-endian, so that newer timestamps sort first.
func appendTimestamp(dst []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(dst, ^uint64(ts))
}

// appendCellKey appends the full key of one cell.
func appendCellKey(dst, tp, row []byte, family string, qualifier []byte, ts int64) []byte {
	dst = append(dst, tp...)
	dst = appendEscaped(dst, row)
	dst = appendColumn(dst, family, qualifier)
	return appendTimestamp(dst, ts)
}

// rowPrefixLen returns the length of the row prefix of a cell key of a table.
func rowPrefixLen(key []byte) (int, error) {
	if len(key) < tablePfx {
		return 0, errCorruptKey
	}
	n, err := escapedLen(key[tablePfx:])
	if err != nil {
		return 0, err
	}
	return tablePfx + n, nil
}

// parsedCell is a cell key split after its row prefix. family and qualifier may
// alias the key.
type parsedCell struct {
	family    []byte
	qualifier []byte
	ts        int64
	// colLen is the length of esc(family)|esc(qualifier): the key's column prefix is
	// key[:rowPrefixLen+colLen].
	colLen int
}

// parseCellSuffix parses esc(family)|esc(qualifier)|^ts, the part of a cell key
// after its row prefix. A qualifier with 0x00 bytes is decoded into scratch[:0]
// (nil is fine; binary qualifiers are common, so hot paths pass a buffer).
func parseCellSuffix(b, scratch []byte) (parsedCell, error) {
	var p parsedCell
	fam, rest, err := readEscaped(b, nil)
	if err != nil {
		return p, err
	}
	qual, rest, err := readEscaped(rest, scratch[:0])
	if err != nil {
		return p, err
	}
	if len(rest) != tsLen {
		return p, errCorruptKey
	}
	p.family, p.qualifier = fam, qual
	p.ts = int64(^binary.BigEndian.Uint64(rest))
	p.colLen = len(b) - tsLen
	return p, nil
}

// prefixEnd is the smallest key greater than every key starting with p, for p that
// do not consist only of 0xFF bytes (none of ours do: each ends with a terminator
// or starts with a namespace byte below 0xFF).
func prefixEnd(p []byte) []byte {
	end := kv.PrefixEnd(p)
	if end == nil {
		panic("embedded: prefixEnd of an all-0xFF prefix")
	}
	return end
}
