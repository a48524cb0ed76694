package optcheck

import (
	"testing"
	"time"
)

func TestNotNegative(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"a negative int is refused with its value",
			NotNegative("write: Options.MaxBatch", -1, Default(10_000)),
			"write: Options.MaxBatch must not be negative (0 means the default, 10000), got -1"},
		{"a negative int64 is refused with its value",
			NotNegative("query: Options.MaxSamples", int64(-5), NoLimit),
			"query: Options.MaxSamples must not be negative (0 means no limit), got -5"},
		{"a negative time.Duration and its default are printed as durations",
			NotNegative("compact: Options.Grace", -time.Second, Default(time.Hour)),
			"compact: Options.Grace must not be negative (0 means the default, 1h0m0s), got -1s"},
		{"a free-form zero clause is kept as written",
			NotNegative("promapi: QueryOptions.Timeout", -time.Nanosecond, "0 takes the default"),
			"promapi: QueryOptions.Timeout must not be negative (0 takes the default), got -1ns"},
		{"zero int is valid", NotNegative("f", 0, NoLimit), ""},
		{"positive int is valid", NotNegative("f", 3, NoLimit), ""},
		{"zero int64 is valid", NotNegative("f", int64(0), NoLimit), ""},
		{"positive int64 is valid", NotNegative("f", int64(1)<<40, NoLimit), ""},
		{"zero time.Duration is valid", NotNegative("f", time.Duration(0), Default(time.Minute)), ""},
		{"positive time.Duration is valid", NotNegative("f", time.Nanosecond, Default(time.Minute)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.want == "" && tc.err != nil:
				t.Fatalf("got %q, want nil", tc.err)
			case tc.want != "" && tc.err == nil:
				t.Fatalf("got nil, want %q", tc.want)
			case tc.want != "" && tc.err.Error() != tc.want:
				t.Fatalf("got  %q\nwant %q", tc.err, tc.want)
			}
		})
	}
}
