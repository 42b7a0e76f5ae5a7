// Package testsize is the one home of how large a test's generated input is
// under the race detector.
//
// The race detector makes the code under test 5–20 times slower and the
// suite is CPU-bound on two cores, so a property test over 10,000 generated
// items costs minutes under -race and finds no race that 1,000 items would
// not. Tests size their input with N: the full size without -race, a tenth
// (never below min) with it. CI runs the whole suite both ways (.ci/run:
// `go test ./...`, then `go test -race ./...`), so every full size runs on
// every submission, and every assertion is checked at both sizes: only the
// input shrinks, never what a test asserts.
//
// Use it for generated volume only (items in a store, messages in a corpus
// walk, iterations of a property). A size that is itself the behaviour
// under test (a bound of 10,000 jobs, a page of 50) stays as it is.
//
// It is also the home of the two other knobs of a package's run, set from
// TestMain: how many of its tests may wait at once (DefaultParallel), and
// that the race programs it starts do not sleep on exit
// (NoExitSleepInChildren).
package testsize

// Race reports whether the binary was built with -race.
const Race = raceEnabled

// Divisor is how much smaller a generated input is under -race.
const Divisor = 10

// N is full without the race detector, and full/Divisor (at least min, at
// most full) with it.
func N(full, min int) int {
	if !Race {
		return full
	}
	n := full / Divisor
	if n < min {
		n = min
	}
	if n > full {
		n = full
	}
	return n
}
