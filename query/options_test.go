package query_test

import (
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/query"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts query.Options
		want string // the error's text, "" for valid options
	}{
		{"the zero options are valid", query.Options{}, ""},
		{"every field set in range is valid", query.Options{MaxSeries: 1, MaxSamples: 1, Concurrency: 1, HostScanMaxSeries: 1, Timeout: time.Second, Plan: query.PlanHostScan}, ""},
		{"a negative HostScanMaxSeries is valid: it disables the scan", query.Options{HostScanMaxSeries: -1}, ""},
		{"a negative MaxSeries is named with its value", query.Options{MaxSeries: -1},
			"query: Options.MaxSeries must not be negative (0 means no limit), got -1"},
		{"a negative MaxSamples is named with its value", query.Options{MaxSamples: -5},
			"query: Options.MaxSamples must not be negative (0 means no limit), got -5"},
		{"a negative Concurrency is named with its value", query.Options{Concurrency: -2},
			"query: Options.Concurrency must not be negative (0 means the default, 8), got -2"},
		{"a negative Timeout is named with its value", query.Options{Timeout: -time.Second},
			"query: Options.Timeout must not be negative (0 means no timeout but the caller's), got -1s"},
		{"an unknown Plan is named with its value", query.Options{Plan: query.PlanHostScan + 1},
			"query: Options.Plan must be PlanAuto, PlanIndex or PlanHostScan, got 3"},
		{"every invalid field is reported, one line each", query.Options{MaxSeries: -1, Concurrency: -1, Plan: 9},
			"query: Options.MaxSeries must not be negative (0 means no limit), got -1\n" +
				"query: Options.Concurrency must not be negative (0 means the default, 8), got -1\n" +
				"query: Options.Plan must be PlanAuto, PlanIndex or PlanHostScan, got 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}
