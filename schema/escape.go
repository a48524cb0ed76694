package schema

import (
	"fmt"
	"strings"
)

// Escaping of variable-length strings inside keys.
//
// A string s is written as esc(s) followed by the terminator 0x00, where esc maps
// every byte on its own:
//
//	0x00 -> 0x01 0x01
//	0x01 -> 0x01 0x02
//	b    -> b          for every other byte b
//
// Invariants, relied on by every key layout of this package:
//
//  1. esc(s) never contains 0x00, so the first 0x00 after the start of a field is its
//     terminator and a field can be parsed without knowing its length.
//  2. Order is preserved: for strings a and b, a < b (byte-wise, as Go compares
//     strings) if and only if esc(a)·0x00 < esc(b)·0x00. Proof: the byte codes
//     e(0x00)=0x0101 < e(0x01)=0x0102 < e(0x02)=0x02 < ... < e(0xFF)=0xFF are
//     increasing and none is a prefix of another, so esc is a prefix-free,
//     order-preserving code. If a and b first differ at byte i, the encodings share
//     esc(a[:i]) and then compare e(a[i]) with e(b[i]), which decides. If instead a is
//     a proper prefix of b, the encodings share esc(a); then a's terminator 0x00 meets
//     the first byte of e(b[len(a)]), which is at least 0x01 — so the shorter string
//     sorts first, as it does unescaped. Equal strings give equal encodings.
//  3. Consequently a key made of several terminated fields, esc(f1)·0x00·esc(f2)·0x00·…,
//     sorts exactly as the tuple (f1, f2, …) does, and esc(f1)·0x00 is a prefix of the
//     encoding of (g1, …) only if f1 == g1 (the terminated field is self-delimiting):
//     host "a" and host "a\x00b" have disjoint key ranges.
//  4. Decoding is the exact inverse and accepts nothing else: 0x01 followed by a byte
//     other than 0x01 or 0x02, or a field without terminator, is an error. So a field
//     that decodes re-encodes to the same bytes.
const (
	escByte   = 0x01
	escZero   = 0x01 // 0x00 is written as escByte escZero
	escEscape = 0x02 // 0x01 is written as escByte escEscape
	fieldEnd  = 0x00
)

// EscapedLen is the length of esc(s)·0x00, as AppendEscaped writes it.
func EscapedLen(s string) int {
	n := len(s) + 1
	if !hasSpecial(s) {
		return n
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= escByte {
			n++
		}
	}
	return n
}

// AppendEscaped appends esc(s) and the terminator 0x00 to dst and returns the
// extended slice. It allocates only if dst lacks capacity (see EscapedLen).
func AppendEscaped(dst []byte, s string) []byte {
	return append(appendEsc(dst, s), fieldEnd)
}

// appendEsc appends esc(s) without terminator. Because esc maps byte by byte,
// esc(p) is a prefix of esc(s) exactly when p is a prefix of s, which is what
// prefix scans over a field's values rely on (IndexValuePrefix).
func appendEsc(dst []byte, s string) []byte {
	if !hasSpecial(s) {
		return append(dst, s...)
	}
	for {
		i := indexSpecial(s)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		if s[i] == 0x00 {
			dst = append(dst, escByte, escZero)
		} else {
			dst = append(dst, escByte, escEscape)
		}
		s = s[i+1:]
	}
}

// hasSpecial reports whether s holds a 0x00 or 0x01 byte. Host and metric names
// almost never do, and testing eight bytes at a time makes that case cheap: for a
// word x, (x - 0x0202…02) &^ x & 0x8080…80 is non-zero exactly when some byte of x is
// below 2 (the classic "has a byte less than n" test).
func hasSpecial(s string) bool {
	const lo, hi = 0x0202020202020202, 0x8080808080808080
	for len(s) >= 8 {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if (x-lo)&^x&hi != 0 {
			return true
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= escByte {
			return true
		}
	}
	return false
}

// indexSpecial is the index of the first 0x00 or 0x01 in s, or -1.
func indexSpecial(s string) int {
	zero := strings.IndexByte(s, 0x00)
	head := s
	if zero >= 0 {
		head = s[:zero]
	}
	if one := strings.IndexByte(head, escByte); one >= 0 {
		return one
	}
	return zero
}

// Unescape decodes one terminated field at the start of b: it returns the string and
// the number of bytes consumed, terminator included. It fails, wrapping ErrMalformed,
// on an escape byte followed by anything but 0x01 or 0x02 and on a missing
// terminator. AppendEscaped(nil, s) equals b[:n].
func Unescape(b []byte) (s string, n int, err error) {
	s, n, err = unescape(b)
	if err != nil {
		return "", 0, fmt.Errorf("schema: %w", err)
	}
	return s, n, nil
}

// unescape is Unescape for a string or a byte slice; given a string, a field
// without escapes is returned as a substring, without copying.
func unescape[T string | []byte](b T) (string, int, error) {
	// Fast path: no escape byte before the terminator, the field is the bytes as is.
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case fieldEnd:
			return string(b[:i]), i + 1, nil
		case escByte:
			return unescapeSlow(b, i)
		}
	}
	return "", 0, fmt.Errorf("escaped string without terminator: %w", ErrMalformed)
}

// unescapeSlow decodes b, whose first escape byte is at first.
func unescapeSlow[T string | []byte](b T, first int) (string, int, error) {
	out := make([]byte, first, len(b))
	copy(out, b[:first])
	for i := first; i < len(b); i++ {
		switch c := b[i]; c {
		case fieldEnd:
			return string(out), i + 1, nil
		case escByte:
			if i+1 >= len(b) {
				return "", 0, fmt.Errorf("escaped string ends after the escape byte at %d: %w", i, ErrMalformed)
			}
			i++
			switch b[i] {
			case escZero:
				out = append(out, 0x00)
			case escEscape:
				out = append(out, 0x01)
			default:
				return "", 0, fmt.Errorf("escape byte at %d followed by 0x%02x: %w", i-1, b[i], ErrMalformed)
			}
		default:
			out = append(out, c)
		}
	}
	return "", 0, fmt.Errorf("escaped string without terminator: %w", ErrMalformed)
}
