package write

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestDescribeIsShort: a rejection's reason names the series with long names
// and values shortened and the labels after about 1 KiB left out, so that a
// request of series with 1 MiB label names is not answered (and logged) with
// megabytes.
func TestDescribeIsShort(t *testing.T) {
	n := strings.Repeat("n", 1<<20)
	got := describe(labels.FromStrings("__name__", "up", n, "x"))
	want := `{__name__="up", ` + strings.Repeat("n", 128) + `…="x"}`
	if got != want {
		t.Errorf("describe of a 1 MiB label name = %q (%d bytes), want %q", got[:min(len(got), 300)], len(got), want)
	}
	var pairs []string
	for i := range 64 {
		pairs = append(pairs, "l"+strings.Repeat("x", 30)+string(rune('a'+i%26))+string(rune('a'+i/26)), strings.Repeat("v", 100))
	}
	got = describe(labels.FromStrings(pairs...))
	if len(got) > maxDescribed+300 || !strings.HasSuffix(got, ", …}") {
		t.Errorf("describe of 64 labels of 132 bytes = %d bytes ending %q; want at most %d, ending \", …}\"", len(got), got[max(0, len(got)-20):], maxDescribed+300)
	}
	if got := describe(labels.FromStrings("__name__", "up", "job", "node")); got != `{__name__="up", job="node"}` {
		t.Errorf("describe = %q", got)
	}
}
