package main

import "testing"

func TestGroupThousands(t *testing.T) {
	for in, want := range map[string]string{"654000": "654 000", "2400000": "2 400 000", "1234": "1234", "12345.67": "12 345.67", "9.5": "9.5"} {
		if got := group(in); got != want {
			t.Errorf("group(%q) = %q, want %q", in, got, want)
		}
	}
}
