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

// Each delete leaves the tombstones kv.MutationKind states, reading what the
// mutations before it in its batch wrote (deleteView), and removes exactly what
// it covers.
func TestDeletesLeaveTheTombstonesTheyState(t *testing.T) {
	row := []byte("r")
	for _, tc := range []struct {
		name   string
		stored []kv.Mutation
		batch  []kv.Mutation
		want   kv.Tombstones
		left   string
	}{
		{
			name:   "a family delete after a put of its row in the batch covers the put in the same run",
			stored: []kv.Mutation{put("r", "a", "y", 1, "y"), put("r", "a", "z", 1, "z"), put("r", "b", "x", 1, "b")},
			batch:  []kv.Mutation{put("r", "a", "x", 5, "x"), kv.DeleteFamily(row, "a", 10)},
			want:   kv.Tombstones{Range: 1},
			left:   "b:x@1=b",
		},
		{
			name:   "a column delete after a family delete of its row in the batch finds nothing left",
			stored: []kv.Mutation{put("r", "a", "p", 1, "p"), put("r", "a", "q", 1, "q")},
			batch:  []kv.Mutation{kv.DeleteFamily(row, "a", 10), kv.DeleteColumn(row, "a", []byte("q"), 10)},
			want:   kv.Tombstones{Range: 1},
		},
		{
			name:   "a put after a family delete in the batch survives it",
			stored: []kv.Mutation{put("r", "a", "p", 1, "old"), put("r", "a", "q", 1, "q")},
			batch:  []kv.Mutation{kv.DeleteFamily(row, "a", 10), put("r", "a", "p", 2, "new")},
			want:   kv.Tombstones{Range: 1},
			left:   "a:p@2=new",
		},
		{
			name: "a family delete around a newer cell cuts its runs there, a run of one cell a point deletion",
			stored: []kv.Mutation{put("r", "a", "p", 1, "p"), put("r", "a", "q", 20, "q"),
				put("r", "a", "s", 1, "s"), put("r", "a", "t", 1, "t")},
			batch: []kv.Mutation{kv.DeleteFamily(row, "a", 10)},
			want:  kv.Tombstones{Point: 1, Range: 1},
			left:  "a:q@20=q",
		},
		{
			name:   "a row delete below MaxTimestamp covers its families with one range",
			stored: []kv.Mutation{put("r", "a", "x", 1, "x"), put("r", "a", "y", 2, "y"), put("r", "b", "x", 1, "b"), put("s", "a", "x", 1, "s")},
			batch:  []kv.Mutation{kv.DeleteRow(row, 10)},
			want:   kv.Tombstones{Range: 1},
		},
		{
			name:   "a column delete removes each version up to its timestamp with a point deletion",
			stored: []kv.Mutation{put("r", "a", "q", 1, "1"), put("r", "a", "q", 2, "2"), put("r", "a", "q", 3, "3")},
			batch:  []kv.Mutation{kv.DeleteColumn(row, "a", []byte("q"), 2)},
			want:   kv.Tombstones{Point: 2},
			left:   "a:q@3=3",
		},
		{
			name:   "deletes of nothing leave no tombstone",
			stored: []kv.Mutation{put("s", "a", "q", 1, "s")},
			batch:  []kv.Mutation{kv.DeleteFamily(row, "a", 10), kv.DeleteColumn(row, "a", []byte("q"), 10), kv.DeleteRow(row, 10)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, t.TempDir(), Options{SweepInterval: -1})
			ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "a", MaxVersions: 5}, {Name: "b"}}})
			mustApply(t, st, "t", tc.stored...)
			before := st.Tombstones()
			mustApply(t, st, "t", tc.batch...)
			if got := delta(before, st.Tombstones()); got != tc.want {
				t.Errorf("tombstones %+v, want %+v", got, tc.want)
			}
			if got := cells(t, st, "t", "r", kv.MaxVersions(5)); got != tc.left {
				t.Errorf("row r holds %q, want %q", got, tc.left)
			}
		})
	}
}
