package cellenc_test

import "math/rand/v2"

// newRand returns a generator with a fixed seed, so that a failure reproduces.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(20261129, 1)) }
