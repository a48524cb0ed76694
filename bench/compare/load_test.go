package main

import (
	"testing"
	"time"
)

func TestLoadDefaultsAreTheDocumentedLoad(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.load.TotalSamples(); got != 2_400_000 {
		t.Errorf("default load has %d samples, want 2 400 000", got)
	}
	if c.load.Span() != 239*15*time.Second || c.load.RequestSize != 2000 || c.load.Senders != 4 || c.rounds != 3 {
		t.Errorf("defaults %+v rounds %d, want the documented load: 240 samples at 15 s, 2 000 per request, 4 senders, 3 rounds", c.load, c.rounds)
	}
}

func TestQuickShrinksTheLoadButExplicitFlagsWin(t *testing.T) {
	c, err := parseFlags([]string{"-quick", "-hosts", "20"})
	if err != nil {
		t.Fatal(err)
	}
	if c.load.Hosts != 20 || c.load.SeriesPerHost != 10 || c.load.Samples != 40 || c.rounds != 1 {
		t.Errorf("-quick -hosts 20 gave %+v rounds %d, want 20 hosts × 10 series × 40 samples, 1 round", c.load, c.rounds)
	}
}

// TestLoadHistogramsSelectsTheHistogramLoad: -load histograms makes every series a
// native histogram of -buckets buckets on 10 hosts unless -hosts says otherwise, and
// an unknown -load is an error.
func TestLoadHistogramsSelectsTheHistogramLoad(t *testing.T) {
	c, err := parseFlags([]string{"-load", "histograms", "-buckets", "24", "-samples", "6", "-request-size", "7"})
	if err != nil {
		t.Fatal(err)
	}
	if l := c.load; !l.Histograms || l.Hosts != 10 || l.SeriesPerHost != 100 || l.Buckets != 24 {
		t.Fatalf("-load histograms gave %+v, want 10 hosts × 100 series of 24-bucket histograms", l)
	}
	if _, err := parseFlags([]string{"-load", "summaries"}); err == nil || err.Error() != `-load: "summaries", want floats or histograms` {
		t.Errorf("-load summaries: error %v", err)
	}
}
