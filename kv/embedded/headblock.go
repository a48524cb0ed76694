package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/klauspost/compress/s2"
)

// Frozen blocks: the cells of a head row that is no longer appended to,
// re-encoded compactly and without a cellRef per cell (headfreeze.go). A block
// is built once and never written again, so a reader may decode one it took
// under the head's lock after releasing it.
//
//	block  = format(1) | count uvarint | arenaLen uvarint | payload
//	format = 0: payload is body; 1: payload is s2(body)
//	body   = keysLen uvarint | timesLen uvarint | keys | times | values
//	keys   = (0 | dod varint)                   a column like the previous, its last bytes a number
//	       | (shared+1 uvarint | rest bytes)*   any other
//	times  = (dod varint)*
//	values = (0 | lead uvarint | trail uvarint | middle)   XOR with the previous value
//	       | (1 | dod varint)                              8 bytes, a number
//	       | (vlen+2 uvarint | value)                      any other
//	bytes  = uvarint length | bytes
//
// count is the number of cells and arenaLen the bytes of their suffixes and
// values, so that a decoder allocates once. A suffix (esc(family) |
// esc(qualifier) | ^ts, the cell key after the row prefix) is split into its
// column, all but the last tsLen bytes, and its timestamp, and the three
// parts go to three streams, so that the compression finds the repeats of
// each (runs of zero deltas of deltas, above all):
//
//   - A column of the length of the previous one that differs from it only in
//     its last (up to 8) bytes is the change of those bytes, read as a
//     big-endian number, from the previous cell's change (a delta of deltas:
//     0 for raw samples, whose qualifier is an offset in steps of the scrape
//     interval). Any other column is the number of leading bytes it shares
//     with the previous one and the rest.
//   - A timestamp, the 8 bytes as a big-endian number, is its delta of deltas
//     too (wrapping; the first cell's previous is 0).
//   - A value is whichever is shorter of: its XOR with the previous value of
//     the same length, less the leading and trailing zero bytes (a gauge's
//     float changes in a few bytes); for 8 bytes after 8 bytes, the delta of
//     deltas of the bytes as a number (a counter's float grows by about the
//     same each step); the value itself.
//
// The compression is S2 (klauspost/compress/s2, Snappy's format extended):
// on blocks of 32 to 256 raw samples zstd's fastest level took 10-17 µs a
// block, most of it setting up, S2 under 1.5 µs, for 5-25 % more bytes.
//
// Invariant: cells are encoded in order and decoded to the same suffixes and
// values in the same order; every suffix is at least tsLen bytes long.

const (
	blockFormatRaw = 0
	blockFormatS2  = 1
)

var errBadHeadBlock = errors.New("malformed head block")

// blockCell is one cell given to encodeBlock.
type blockCell struct {
	suffix, value []byte
}

// deltas tracks a delta of deltas: prev is the last number, d the last delta.
type deltas struct{ prev, d uint64 }

// next returns the delta of deltas of v and moves to v.
func (x *deltas) next(v uint64) int64 {
	d := v - x.prev
	dod := int64(d - x.d)
	x.prev, x.d = v, d
	return dod
}

// apply returns the number whose delta of deltas is dod and moves to it.
func (x *deltas) apply(dod int64) uint64 {
	x.d += uint64(dod)
	x.prev += x.d
	return x.prev
}

// beNumber reads b (at most 8 bytes) as a big-endian number.
func beNumber(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// putBENumber writes v into b (at most 8 bytes), big-endian.
func putBENumber(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// numberTail is how many of a column's last bytes the delta form covers.
func numberTail(col []byte) int { return min(len(col), 8) }

// appendBlockKey appends col, the column of a cell, to the keys stream; prev
// is the previous cell's column, if hasPrev.
func appendBlockKey(keys, prev, col []byte, hasPrev bool, num *deltas) []byte {
	k := numberTail(col)
	if hasPrev && len(col) == len(prev) && string(col[:len(col)-k]) == string(prev[:len(col)-k]) {
		keys = append(keys, 0)
		return binary.AppendVarint(keys, num.next(beNumber(col[len(col)-k:])))
	}
	shared := commonPrefix(prev, col)
	keys = binary.AppendUvarint(keys, uint64(shared)+1)
	*num = deltas{prev: beNumber(col[len(col)-k:])}
	return appendBytes(keys, col[shared:])
}

// appendBlockValue appends v to the values stream, in the shortest of its
// forms; prev is the previous cell's value, if hasPrev. xor is scratch space,
// returned for the next call.
func appendBlockValue(values, xor, prev, v []byte, hasPrev bool, num *deltas) (_, _ []byte) {
	best, form := len(v)+varintLen(uint64(len(v))+2), 2
	if hasPrev && len(v) == len(prev) && len(v) > 0 {
		xor = appendXOR(xor[:0], prev, v)
		if len(xor)+1 < best {
			best, form = len(xor)+1, 0
		}
	}
	var dod int64
	if len(v) == 8 {
		if hasPrev && len(prev) == 8 {
			dod = num.next(binary.BigEndian.Uint64(v))
			if n := 1 + varintLen(zigzag(dod)); n < best {
				form = 1
			}
		} else {
			*num = deltas{prev: binary.BigEndian.Uint64(v)}
		}
	}
	switch form {
	case 0:
		return append(append(values, 0), xor...), xor
	case 1:
		return binary.AppendVarint(append(values, 1), dod), xor
	default:
		values = binary.AppendUvarint(values, uint64(len(v))+2)
		return append(values, v...), xor
	}
}

// appendXOR appends lead uvarint | trail uvarint | middle: v XOR prev (of the
// same length) without its leading and trailing zero bytes.
func appendXOR(dst, prev, v []byte) []byte {
	lead := 0
	for lead < len(v) && v[lead] == prev[lead] {
		lead++
	}
	trail := 0
	for trail < len(v)-lead && v[len(v)-1-trail] == prev[len(v)-1-trail] {
		trail++
	}
	dst = binary.AppendUvarint(dst, uint64(lead))
	dst = binary.AppendUvarint(dst, uint64(trail))
	for i := lead; i < len(v)-trail; i++ {
		dst = append(dst, v[i]^prev[i])
	}
	return dst
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// varintLen is the size of v as a uvarint.
func varintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// encodeBlock encodes cells, in the order given, as a block. It fails only if
// a suffix is shorter than a timestamp.
func encodeBlock(cells []blockCell) ([]byte, error) {
	// Room for raw samples' cells, whose deltas of deltas are mostly 0.
	keys, times, values := make([]byte, 0, 2*len(cells)+32), make([]byte, 0, len(cells)+32), make([]byte, 0, 2*len(cells)+32)
	var (
		colNum, tsNum, valueNum deltas
		xor, prevCol, prevValue []byte
	)
	arenaLen := 0
	for i, c := range cells {
		if len(c.suffix) < tsLen {
			return nil, fmt.Errorf("embedded: head block: cell %d: suffix of %d bytes, shorter than a timestamp", i, len(c.suffix))
		}
		arenaLen += len(c.suffix) + len(c.value)
		col := c.suffix[:len(c.suffix)-tsLen]
		keys = appendBlockKey(keys, prevCol, col, i > 0, &colNum)
		times = binary.AppendVarint(times, tsNum.next(binary.BigEndian.Uint64(c.suffix[len(col):])))
		values, xor = appendBlockValue(values, xor, prevValue, c.value, i > 0, &valueNum)
		prevCol, prevValue = col, c.value
	}
	body := make([]byte, 0, 2*binary.MaxVarintLen64+len(keys)+len(times)+len(values))
	body = binary.AppendUvarint(body, uint64(len(keys)))
	body = binary.AppendUvarint(body, uint64(len(times)))
	body = append(append(append(body, keys...), times...), values...)

	head := []byte{blockFormatS2}
	head = binary.AppendUvarint(head, uint64(len(cells)))
	head = binary.AppendUvarint(head, uint64(arenaLen))
	payload := s2.Encode(nil, body)
	if len(payload) >= len(body) {
		head[0], payload = blockFormatRaw, body
	}
	// Exactly the bytes it needs: the block stays in memory for long.
	block := make([]byte, 0, len(head)+len(payload))
	return append(append(block, head...), payload...), nil
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// blockHeader returns the number of cells of a block and the bytes their
// suffixes and values take, without decoding it.
func blockHeader(block []byte) (count, arenaLen int, err error) {
	d := byteReader{b: block, i: 1}
	c, a := d.uvarint(), d.uvarint()
	// Every cell has a suffix of at least tsLen bytes.
	if d.bad || len(block) == 0 || a > maxBlockArena || c > a/tsLen {
		return 0, 0, fmt.Errorf("%w: bad header", errBadHeadBlock)
	}
	return int(c), int(a), nil
}

// maxBlockArena bounds the arena a block may claim: cellRef offsets are
// uint32.
const maxBlockArena = 1<<32 - 1

// byteReader reads a stream of a block; bad sticks once a read fails, after
// which reads return zero values. (Its position is an index, not a re-sliced
// []byte: the decoder's loop stores no pointer.)
type byteReader struct {
	b   []byte
	i   int
	bad bool
}

func (d *byteReader) uvarint() uint64 {
	if d.i < len(d.b) && d.b[d.i] < 0x80 {
		// One byte: most of a block's numbers are small deltas of deltas.
		d.i++
		return uint64(d.b[d.i-1])
	}
	v, n := binary.Uvarint(d.b[min(d.i, len(d.b)):])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.i += n
	return v
}

// varint reads a signed varint: binary.AppendVarint's zigzag encoding of an
// unsigned one.
func (d *byteReader) varint() int64 {
	x := d.uvarint()
	if x&1 != 0 {
		return ^int64(x >> 1)
	}
	return int64(x >> 1)
}

// take returns the next n bytes.
func (d *byteReader) take(n uint64) []byte {
	if n > uint64(len(d.b)-d.i) {
		d.bad = true
		return nil
	}
	b := d.b[d.i : d.i+int(n)]
	d.i += int(n)
	return b
}

func (d *byteReader) done() bool { return !d.bad && d.i == len(d.b) }

// decodeBlock appends the cells of block to arena and their refs (offsets in
// the returned arena) to refs.
func decodeBlock(block, arena []byte, refs []cellRef) ([]byte, []cellRef, error) {
	count, arenaLen, err := blockHeader(block)
	if err != nil {
		return arena, refs, err
	}
	if uint64(len(arena))+uint64(arenaLen) > maxBlockArena {
		return arena, refs, fmt.Errorf("%w: arena over 4 GiB", errBadHeadBlock)
	}
	h := byteReader{b: block, i: 1}
	h.uvarint()
	h.uvarint()
	body := block[h.i:]
	switch block[0] {
	case blockFormatRaw:
	case blockFormatS2:
		if body, err = s2.Decode(nil, body); err != nil {
			return arena, refs, fmt.Errorf("%w: %w", errBadHeadBlock, err)
		}
	default:
		return arena, refs, fmt.Errorf("%w: format %d", errBadHeadBlock, block[0])
	}
	d := byteReader{b: body}
	keysLen, timesLen := d.uvarint(), d.uvarint()
	streams := d.take(uint64(len(body) - d.i))
	if d.bad || keysLen > uint64(len(streams)) || timesLen > uint64(len(streams))-keysLen {
		return arena, refs, fmt.Errorf("%w: bad stream lengths", errBadHeadBlock)
	}
	keys := byteReader{b: streams[:keysLen]}
	times := byteReader{b: streams[keysLen : keysLen+timesLen]}
	values := byteReader{b: streams[keysLen+timesLen:]}

	arena = slices.Grow(arena, arenaLen)
	refs = slices.Grow(refs, count)
	start := len(arena)
	var (
		prevCol, prevValue      []byte // in arena
		colNum, tsNum, valueNum deltas
	)
	for i := range count {
		off := len(arena)
		if h := keys.uvarint(); h == 0 && i > 0 {
			arena = append(arena, prevCol...)
			putBENumber(arena[len(arena)-numberTail(prevCol):], colNum.apply(keys.varint()))
		} else {
			shared := h - 1
			rest := keys.take(keys.uvarint())
			if h == 0 || shared > uint64(len(prevCol)) {
				return arena, refs, fmt.Errorf("%w: cell %d: bad key", errBadHeadBlock, i)
			}
			arena = append(arena, prevCol[:shared]...)
			arena = append(arena, rest...)
			colNum = deltas{prev: beNumber(arena[len(arena)-numberTail(arena[off:]):])}
		}
		colEnd := len(arena)
		arena = binary.BigEndian.AppendUint64(arena, tsNum.apply(times.varint()))
		klen := len(arena) - off
		if keys.bad || times.bad {
			return arena, refs, fmt.Errorf("%w: cell %d: truncated key", errBadHeadBlock, i)
		}
		var err error
		if arena, err = appendBlockValueDecoded(arena, &values, prevValue, &valueNum); err != nil {
			return arena, refs, fmt.Errorf("%w: cell %d: %w", errBadHeadBlock, i, err)
		}
		if len(arena)-start > arenaLen {
			return arena, refs, fmt.Errorf("%w: cells over the %d bytes the header claims", errBadHeadBlock, arenaLen)
		}
		// Slices of arena stay valid: its capacity was grown to fit.
		prevCol, prevValue = arena[off:colEnd], arena[off+klen:]
		refs = append(refs, cellRef{off: uint32(off), klen: uint32(klen), vlen: uint32(len(arena) - off - klen)})
	}
	if !keys.done() || !times.done() || !values.done() || len(arena)-start != arenaLen {
		return arena, refs, fmt.Errorf("%w: streams do not match %d cells of %d bytes", errBadHeadBlock, count, arenaLen)
	}
	return arena, refs, nil
}

// appendBlockValueDecoded decodes one value from d and appends it to arena;
// prev is the previous cell's value (nil for the first), num the state of the
// number form.
func appendBlockValueDecoded(arena []byte, d *byteReader, prev []byte, num *deltas) ([]byte, error) {
	h := d.uvarint()
	if d.bad {
		return arena, errors.New("truncated value")
	}
	off := len(arena)
	switch {
	case h >= 2:
		v := d.take(h - 2)
		if d.bad {
			return arena, errors.New("truncated value")
		}
		arena = append(arena, v...)
	case h == 1:
		dod := d.varint()
		if d.bad || len(prev) != 8 {
			return arena, errors.New("bad number value")
		}
		arena = binary.BigEndian.AppendUint64(arena, num.apply(dod))
	default:
		lead, trail := d.uvarint(), d.uvarint()
		if d.bad || len(prev) == 0 || lead > uint64(len(prev)) || trail > uint64(len(prev))-lead {
			return arena, errors.New("bad XOR value")
		}
		mid := d.take(uint64(len(prev)) - lead - trail)
		if d.bad {
			return arena, errors.New("truncated XOR value")
		}
		// prev is in arena, whose capacity fits: append copies it in place.
		arena = append(arena, prev...)
		for i, x := range mid {
			arena[off+int(lead)+i] ^= x
		}
	}
	// The number form's state follows every value, as the encoder's does.
	if v := arena[off:]; len(v) == 8 && h != 1 {
		if len(prev) == 8 {
			num.next(binary.BigEndian.Uint64(v))
		} else {
			*num = deltas{prev: binary.BigEndian.Uint64(v)}
		}
	}
	return arena, nil
}
