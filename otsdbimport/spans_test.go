package otsdbimport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/otsdbformat"
)

func spanString(s span) string {
	f := func(b []byte, open string) string {
		if b == nil {
			return open
		}
		return fmt.Sprintf("%x", b)
	}
	return "[" + f(s.start, "-") + "," + f(s.stop, "+") + ")"
}

func spansString(ss []span) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, spanString(s))
	}
	return strings.Join(parts, " ")
}

func k(b ...byte) []byte { return b }

func TestSpanSetAddMerges(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  []span
		want string
	}{
		{"one", []span{{k(1), k(2)}}, "[01,02)"},
		{"apart, added out of order", []span{{k(5), k(6)}, {k(1), k(2)}}, "[01,02) [05,06)"},
		{"touching", []span{{k(1), k(2)}, {k(2), k(3)}}, "[01,03)"},
		{"overlapping", []span{{k(1), k(4)}, {k(2), k(6)}}, "[01,06)"},
		{"inside", []span{{k(1), k(9)}, {k(2), k(3)}}, "[01,09)"},
		{"from the table's start and to its end", []span{{nil, k(2)}, {k(8), nil}, {k(2), k(3)}}, "[-,03) [08,+)"},
		{"bridging", []span{{k(1), k(2)}, {k(3), k(4)}, {k(2), k(3)}}, "[01,04)"},
		{"everything", []span{{k(3), nil}, {nil, k(3)}}, "[-,+)"},
		{"a grown span replaces itself", []span{{k(1), k(1, 5)}, {k(1), k(1, 7, 0)}}, "[01,010700)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s spanSet
			for _, sp := range tc.add {
				s = s.add(sp)
			}
			if got := spansString(s); got != tc.want {
				t.Fatalf("spans = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSpanSetMissing(t *testing.T) {
	done := spanSet{}.add(span{k(2), k(3)}).add(span{k(5), k(6, 1)})
	for _, tc := range []struct {
		r    span
		want string
	}{
		{span{nil, nil}, "[-,02) [03,05) [0601,+)"},
		{span{k(2), k(3)}, ""},
		{span{k(2, 5), k(2, 9)}, ""},
		{span{k(1), k(4)}, "[01,02) [03,04)"},
		{span{k(3), k(5)}, "[03,05)"},
		{span{k(6), k(7)}, "[0601,07)"},
		{span{k(7), nil}, "[07,+)"},
	} {
		if got := spansString(done.missing(tc.r)); got != tc.want {
			t.Errorf("missing %s = %s, want %s", spanString(tc.r), got, tc.want)
		}
	}
	if got := spansString(spanSet{}.add(span{k(4), nil}).missing(span{k(1), nil})); got != "[01,04)" {
		t.Errorf("missing before a span to the end = %s", got)
	}
}

// TestPlan: the ranges cover every key once, cut at metric UIDs, bucket by
// bucket, and are handed out bucket-interleaved.
func TestPlan(t *testing.T) {
	metrics := [][]byte{k(0, 0, 1), k(0, 0, 2), k(0, 0, 3), k(0, 0, 4)}
	for _, tc := range []struct {
		name   string
		layout otsdbformat.Layout
		total  int
		want   string
	}{
		{"unsalted, one range", otsdbformat.Layout{}, 1, "[-,+)"},
		{"unsalted, a range a metric", otsdbformat.Layout{}, 100, "[-,000002) [000002,000003) [000003,000004) [000004,+)"},
		{"unsalted, two ranges", otsdbformat.Layout{}, 2, "[-,000003) [000003,+)"},
		{"salted, a range a bucket", otsdbformat.Layout{SaltWidth: 1, SaltBuckets: 3}, 2, "[-,01) [01,02) [02,+)"},
		{"salted, two a bucket, interleaved", otsdbformat.Layout{SaltWidth: 1, SaltBuckets: 2}, 4,
			"[-,00000003) [01,01000003) [00000003,01) [01000003,+)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spansString(plan(tc.layout, metrics, tc.total)); got != tc.want {
				t.Fatalf("plan = %s, want %s", got, tc.want)
			}
		})
	}
	if got := spansString(plan(otsdbformat.Layout{}, nil, 64)); got != "[-,+)" {
		t.Errorf("plan without metrics = %s, want the whole table", got)
	}
}

func TestCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	cp, err := OpenCheckpoint(path, "job a")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.addDone(span{nil, k(2)}); err != nil {
		t.Fatal(err)
	}
	if err := cp.addDone(span{k(5), nil}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := `{"job":"job a","done":[["","02"],["05",""]]}` + "\n"; string(b) != want {
		t.Fatalf("checkpoint file %s, want %s", b, want)
	}
	again, err := OpenCheckpoint(path, "job a")
	if err != nil || spansString(again.doneSpans()) != "[-,02) [05,+)" || again.Complete() {
		t.Fatalf("reopened: %s, complete %v, %v", spansString(again.doneSpans()), again.Complete(), err)
	}
	if err := again.setComplete(); err != nil {
		t.Fatal(err)
	}
	if c, err := OpenCheckpoint(path, "job a"); err != nil || !c.Complete() {
		t.Fatalf("reopened after completion: %v, %v", c.Complete(), err)
	}

	_, err = OpenCheckpoint(path, "job b")
	want := fmt.Sprintf(`importer: checkpoint belongs to another import: %s records "job a", this import is "job b": `+
		"delete it to start over, or give another --checkpoint", path)
	if !errors.Is(err, importer.ErrCheckpointMismatch) || err.Error() != want {
		t.Errorf("a checkpoint of another job: %v, want %s", err, want)
	}
	for content, msg := range map[string]string{
		"not json":                             "is not a checkpoint (invalid character 'o' in literal null (expecting 'u')): delete it to start over",
		`{"job":"job a","done":[["0x","01"]]}`: `the span "0x".."01" is not a key range: delete it to start over`,
		`{"job":"job a","done":[["05","01"]]}`: `the span "05".."01" is not a key range: delete it to start over`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenCheckpoint(path, "job a"); err == nil || !strings.HasSuffix(err.Error(), msg) {
			t.Errorf("checkpoint %q: %v, want ...%s", content, err, msg)
		}
	}
}
