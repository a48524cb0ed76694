package figures

import (
	"math"
	"testing"
	"time"
)

func TestGroupThousands(t *testing.T) {
	for in, want := range map[string]string{"654000": "654 000", "2400000": "2 400 000", "1234": "1234", "12345.67": "12 345.67", "9.5": "9.5"} {
		if got := Group(in); got != want {
			t.Errorf("Group(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatGroupsAndShowsNaNAsADash(t *testing.T) {
	if got := Format("%.1f", 123456.78); got != "123 456.8" {
		t.Errorf("Format = %q, want 123 456.8", got)
	}
	if got := Format("%.1f", math.NaN()); got != "–" {
		t.Errorf("Format(NaN) = %q, want –", got)
	}
}

func TestPerMillion(t *testing.T) {
	if got := PerMillion(3*time.Second, 2_000_000); got != 1.5 {
		t.Errorf("PerMillion(3s, 2M) = %v, want 1.5", got)
	}
	if got := PerMillion(time.Second, 0); !math.IsNaN(got) {
		t.Errorf("PerMillion(1s, 0) = %v, want NaN", got)
	}
}

// TestLateShare: a sample is late for tsdb once its 1 h bucket ended more
// than 3 m (the on-time window) before it is sent.
func TestLateShare(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		start, end, now string
		want            float64
	}{
		// 10:00..10:59 at 1 m, sent at 11:02: the 10:00 bucket is still on time.
		{"2026-12-03T10:00:00Z", "2026-12-03T10:59:00Z", "2026-12-03T11:02:59Z", 0},
		// ... and late from 11:03 on.
		{"2026-12-03T10:00:00Z", "2026-12-03T10:59:00Z", "2026-12-03T11:03:00Z", 1},
		// 10:30..11:29, sent at 11:30: the 30 samples of 10:xx are late.
		{"2026-12-03T10:30:00Z", "2026-12-03T11:29:00Z", "2026-12-03T11:30:00Z", 0.5},
	} {
		if got := LateShare(at(c.start), at(c.end), time.Minute, at(c.now)); got != c.want {
			t.Errorf("LateShare(%s..%s at %s) = %v, want %v", c.start, c.end, c.now, got, c.want)
		}
	}
}

func TestTableAlignsAllButTheFirstColumnRight(t *testing.T) {
	got := Table([]string{"", "a", "b"}, [][]string{{"x", "1", "2"}, {"y", "–", "3"}})
	want := "| | a | b |\n|---|---:|---:|\n| x | 1 | 2 |\n| y | – | 3 |\n"
	if got != want {
		t.Errorf("Table =\n%s\nwant\n%s", got, want)
	}
}
