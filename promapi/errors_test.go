package promapi

import (
	"errors"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/write"
)

// TestOwnConditionsAreOwnErrors: promapi answers its own conditions (a body
// it cannot read, no store to serve from) with its own errors, not with the
// sentinels of the layers below, whose meaning is theirs (a request the
// writer refused, a store that does not answer).
func TestOwnConditionsAreOwnErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		own   error
		not   error
		text  string
		would int
	}{
		{"an empty body", errEmptyBody, errInvalidBody, write.ErrInvalid, "invalid write request: empty request body", 400},
		{"no store configured", errNoStore, errStoreUnavailable, kv.ErrUnavailable, "store unavailable: no store is configured", 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.own) || errors.Is(tc.err, tc.not) {
				t.Errorf("%v: wraps %v: %t, wraps %v: %t; want only promapi's own", tc.err, tc.own, errors.Is(tc.err, tc.own),
					tc.not, errors.Is(tc.err, tc.not))
			}
			if tc.err.Error() != tc.text || statusOf(tc.err) != tc.would {
				t.Errorf("%q answered %d, want %q answered %d", tc.err, statusOf(tc.err), tc.text, tc.would)
			}
		})
	}
}
