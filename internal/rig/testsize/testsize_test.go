package testsize

import "testing"

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
