//go:build race

package storm

// raceEnabled builds the mailagent binary with -race too.
const raceEnabled = true
