package embedded

import (
	"fmt"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Apply writes a batch of puts in key order (applyPuts); the caller's order must
// still decide which of two puts of one cell wins, however far apart they are.
func TestPutsOutOfKeyOrderLastOfACellWins(t *testing.T) {
	st := openStore(t, t.TempDir(), Options{})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "a", MaxVersions: 5}}})
	var muts []kv.Mutation
	muts = append(muts, put("r", "a", "q", 7, "first"))
	for i := 9; i >= 0; i-- { // rows sorting both before and after "r"
		muts = append(muts, put(fmt.Sprintf("%c%d", 'a'+2*i, i), "a", "q", 1, "x"))
	}
	muts = append(muts, put("r", "a", "q", 7, "second"), put("r", "a", "p", 8, "p"))
	mustApply(t, st, "t", muts...)
	if got, want := cells(t, st, "t", "r", kv.MaxVersions(5)), "a:p@8=p a:q@7=second"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	for i := range 10 {
		if got := cells(t, st, "t", fmt.Sprintf("%c%d", 'a'+2*i, i)); got != "a:q@1=x" {
			t.Fatalf("row %d holds %q", i, got)
		}
	}
}
