//go:build race

package agente2e

// raceEnabled builds the mailagent binary with -race too.
const raceEnabled = true
