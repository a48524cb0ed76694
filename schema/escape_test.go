package schema_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema"
)

func TestAppendEscaped(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"the empty string is just the terminator", "", "\x00"},
		{"plain bytes are written as they are", "abc", "abc\x00"},
		{"0x00 becomes 0x01 0x01", "a\x00b", "a\x01\x01b\x00"},
		{"0x01 becomes 0x01 0x02", "a\x01b", "a\x01\x02b\x00"},
		{"0x02 and 0xFF are not escaped", "\x02\xff", "\x02\xff\x00"},
		{"UTF-8 is written as its bytes", "日", "日\x00"},
		{"runs of special bytes each expand", "\x00\x01\x00", "\x01\x01\x01\x02\x01\x01\x00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := schema.AppendEscaped([]byte("p"), tc.in)
			if string(got) != "p"+tc.want {
				t.Fatalf("AppendEscaped(%q) = %q, want %q", tc.in, got[1:], tc.want)
			}
			if n := schema.EscapedLen(tc.in); n != len(tc.want) {
				t.Errorf("EscapedLen(%q) = %d, want %d", tc.in, n, len(tc.want))
			}
			s, n, err := schema.Unescape([]byte(tc.want + "rest"))
			if err != nil || s != tc.in || n != len(tc.want) {
				t.Errorf("Unescape(%q) = %q, %d, %v; want %q, %d", tc.want, s, n, err, tc.in, len(tc.want))
			}
		})
	}
}

func TestUnescapeRejectsMalformedInput(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"an empty input has no terminator", ""},
		{"a string without terminator", "abc"},
		{"an escape byte at the end", "ab\x01"},
		{"an escape byte followed by 0x00", "a\x01\x00"},
		{"an escape byte followed by 0x03", "a\x01\x03\x00"},
		{"an escape byte followed by 0xFF", "\x01\xff\x00"},
		{"a valid escape, then no terminator", "\x01\x01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, n, err := schema.Unescape([]byte(tc.in))
			if !errors.Is(err, schema.ErrMalformed) {
				t.Fatalf("Unescape(%q) = %q, %d, %v; want ErrMalformed", tc.in, s, n, err)
			}
		})
	}
}

func TestEscapingRoundTripsAndPreservesOrder(t *testing.T) {
	r := newRand()
	strs := make([]string, 400)
	enc := make([][]byte, len(strs))
	for i := range strs {
		strs[i] = randString(r)
		enc[i] = schema.AppendEscaped(nil, strs[i])
		if bytes.IndexByte(enc[i][:len(enc[i])-1], 0) >= 0 {
			t.Fatalf("esc(%q) = %q contains 0x00 before the terminator", strs[i], enc[i])
		}
		s, n, err := schema.Unescape(enc[i])
		if err != nil || s != strs[i] || n != len(enc[i]) {
			t.Fatalf("Unescape(AppendEscaped(%q)) = %q, %d, %v", strs[i], s, n, err)
		}
	}
	for i := range strs {
		for j := range strs {
			if got, want := sign(bytes.Compare(enc[i], enc[j])), cmpOrdered(strs[i], strs[j]); got != want {
				t.Fatalf("order of %q and %q is %d, of their encodings %d", strs[i], strs[j], want, got)
			}
			// A terminated field is a prefix of another encoding only if equal.
			if bytes.HasPrefix(enc[j], enc[i]) != (strs[i] == strs[j]) {
				t.Fatalf("esc(%q) prefix of esc(%q): %v", strs[i], strs[j], bytes.HasPrefix(enc[j], enc[i]))
			}
		}
	}
}

// referenceEscape is the escaping spelled out byte by byte, to check the word-at-a-time
// fast path against.
func referenceEscape(s string) []byte {
	var out []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0x00:
			out = append(out, 0x01, 0x01)
		case 0x01:
			out = append(out, 0x01, 0x02)
		default:
			out = append(out, s[i])
		}
	}
	return append(out, 0x00)
}

func TestEscapingFindsSpecialBytesAtEveryPosition(t *testing.T) {
	for n := 0; n <= 25; n++ {
		for _, filler := range []byte{0x02, 0x03, 0x7f, 0x80, 0x81, 0xfe, 0xff, 'a'} {
			plain := bytes.Repeat([]byte{filler}, n)
			cases := []string{string(plain)}
			for pos := 0; pos < n; pos++ {
				for _, special := range []byte{0x00, 0x01} {
					b := bytes.Clone(plain)
					b[pos] = special
					cases = append(cases, string(b))
				}
			}
			for _, s := range cases {
				want := referenceEscape(s)
				if got := schema.AppendEscaped(nil, s); !bytes.Equal(got, want) {
					t.Fatalf("AppendEscaped(%q) = %q, want %q", s, got, want)
				}
				if got := schema.EscapedLen(s); got != len(want) {
					t.Fatalf("EscapedLen(%q) = %d, want %d", s, got, len(want))
				}
			}
		}
	}
}
