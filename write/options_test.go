package write_test

import (
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits write.Limits
		want   string // "" for valid
	}{
		{"zero limits are no limits", write.Limits{}, ""},
		{"the default limits are valid", write.DefaultLimits(), ""},
		{"a negative MaxSeriesPerRequest is refused", write.Limits{MaxSeriesPerRequest: -1},
			"write: Limits.MaxSeriesPerRequest must not be negative (0 means no limit), got -1"},
		{"a negative MaxSamplesPerRequest is refused", write.Limits{MaxSamplesPerRequest: -2},
			"write: Limits.MaxSamplesPerRequest must not be negative (0 means no limit), got -2"},
		{"a negative MaxLabelsPerSeries is refused", write.Limits{MaxLabelsPerSeries: -3},
			"write: Limits.MaxLabelsPerSeries must not be negative (0 means no limit), got -3"},
		{"a negative MaxLabelNameLength is refused", write.Limits{MaxLabelNameLength: -4},
			"write: Limits.MaxLabelNameLength must not be negative (0 means no limit), got -4"},
		{"a negative MaxLabelValueLength is refused", write.Limits{MaxLabelValueLength: -5},
			"write: Limits.MaxLabelValueLength must not be negative (0 means no limit), got -5"},
		{"a negative MaxFutureSkew is refused", write.Limits{MaxFutureSkew: -time.Minute},
			"write: Limits.MaxFutureSkew must not be negative (0 means no limit), got -1m0s"},
		{"a negative MaxAge is refused", write.Limits{MaxAge: -time.Nanosecond},
			"write: Limits.MaxAge must not be negative (0 means no limit), got -1ns"},
		{"every invalid field is named, one a line, in field order",
			write.Limits{MaxAge: -time.Hour, MaxSeriesPerRequest: -1, MaxLabelValueLength: -1, MaxLabelsPerSeries: 3},
			"write: Limits.MaxSeriesPerRequest must not be negative (0 means no limit), got -1\n" +
				"write: Limits.MaxLabelValueLength must not be negative (0 means no limit), got -1\n" +
				"write: Limits.MaxAge must not be negative (0 means no limit), got -1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, tc.limits.Validate(), tc.want)
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts write.Options
		want string // "" for valid
	}{
		{"zero options take the defaults", write.Options{}, ""},
		{"negative cache sizes disable the caches", write.Options{SeenRowsSize: -1, MetadataCacheSize: -1}, ""},
		{"positive values are taken as they are", write.Options{Apply: kv.ApplyOptions{MaxBatch: 1, Concurrency: 1}, Limits: write.DefaultLimits()}, ""},
		{"a negative Apply.MaxBatch is refused", write.Options{Apply: kv.ApplyOptions{MaxBatch: -1}},
			"write: Options.Apply.MaxBatch must not be negative (0 means the default, 10000), got -1"},
		{"a negative Apply.Concurrency is refused", write.Options{Apply: kv.ApplyOptions{Concurrency: -2}},
			"write: Options.Apply.Concurrency must not be negative (0 means the default, 4), got -2"},
		{"invalid limits are refused", write.Options{Limits: write.Limits{MaxSamplesPerRequest: -7}},
			"write: Limits.MaxSamplesPerRequest must not be negative (0 means no limit), got -7"},
		{"every invalid field is named, limits first",
			write.Options{Limits: write.Limits{MaxFutureSkew: -time.Second}, Apply: kv.ApplyOptions{MaxBatch: -1, Concurrency: -1}},
			"write: Limits.MaxFutureSkew must not be negative (0 means no limit), got -1s\n" +
				"write: Options.Apply.MaxBatch must not be negative (0 means the default, 10000), got -1\n" +
				"write: Options.Apply.Concurrency must not be negative (0 means the default, 4), got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, tc.opts.Validate(), tc.want)
		})
	}
}

// TestNewRefusesInvalidOptions: New validates its options before it makes
// anything, and says which field is wrong.
func TestNewRefusesInvalidOptions(t *testing.T) {
	w, err := write.New(nil, schema.DefaultEmbeddedSettings(), nil, nil, write.Options{Limits: write.Limits{MaxSeriesPerRequest: -1}})
	checkErr(t, err, "write: Limits.MaxSeriesPerRequest must not be negative (0 means no limit), got -1")
	if w != nil {
		t.Errorf("New with invalid options returned a Writer")
	}
}

// checkErr fails t unless err is nil when want is "", or has exactly the text want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error %q, want none", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("error %q, want %q", err, want)
	}
}
