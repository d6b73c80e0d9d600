package testserver

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// SeedEnv names the variable that gives a randomised test its seed back.
const SeedEnv = "HEAPSCOPE_TEST_SEED"

// Seed returns the seed of a randomised test: SeedEnv's value when set,
// a fresh one otherwise. It logs the seed, so that a failure seen once
// can be run again as it was.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(SeedEnv); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer: %v", SeedEnv, v, err)
		}
		seed = s
	}
	t.Logf("seed %d: run again with %s=%d", seed, SeedEnv, seed)
	return seed
}
