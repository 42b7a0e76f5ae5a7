//go:build race

package guard

// raceEnabled: the race detector slows the guard's regexps several times,
// which timing tests allow for.
const raceEnabled = true
