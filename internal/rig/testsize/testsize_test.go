package testsize

import (
	"os"
	"testing"
)

func TestN(t *testing.T) {
	t.Parallel()
	cases := []struct{ full, min, norace, race int }{
		{10000, 100, 10000, 1000},
		{500, 100, 500, 100}, // a tenth is below min
		{50, 100, 50, 50},    // min above full: never more than full
		{0, 0, 0, 0},
	}
	for _, c := range cases {
		want := c.norace
		if Race {
			want = c.race
		}
		if got := N(c.full, c.min); got != want {
			t.Errorf("N(%d, %d) = %d, want %d (race %v)", c.full, c.min, got, want, Race)
		}
	}
}

// TestNoExitSleepInChildren: a child race program exits at once, and the
// options already set stay. Sequential: it sets the environment.
func TestNoExitSleepInChildren(t *testing.T) {
	for _, c := range []struct{ set, want string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=50", "atexit_sleep_ms=50"},
	} {
		t.Setenv("GORACE", c.set)
		if err := NoExitSleepInChildren(); err != nil {
			t.Fatal(err)
		}
		if got := os.Getenv("GORACE"); got != c.want {
			t.Errorf("GORACE %q: got %q, want %q", c.set, got, c.want)
		}
	}
}
