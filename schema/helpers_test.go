package schema_test

import (
	"math/rand/v2"
	"strings"
)

// newRand returns a generator with a fixed seed, so that a failure reproduces.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(20261129, 1)) }

// pieces are what random strings are built from: the bytes the escaping treats
// specially, the largest byte, ASCII and multi-byte UTF-8. A small alphabet makes
// shared prefixes, one string being a prefix of another, and ties frequent.
var pieces = []string{"\x00", "\x01", "\x02", "\xff", "a", "b", "é", "日"}

// randString returns a short string of pieces, or now and then random bytes.
func randString(r *rand.Rand) string {
	if r.IntN(8) == 0 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return string(b)
	}
	var sb strings.Builder
	for n := r.IntN(5); n > 0; n-- {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

// sign is -1, 0 or 1 as c is negative, zero or positive.
func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// cmpOrdered compares two values of an ordered type.
func cmpOrdered[T ~string | ~uint64 | ~int64 | ~byte | ~uint32](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
