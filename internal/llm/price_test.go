package llm

import (
	"math"
	"testing"
)

func TestPriceOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model   string
		in, out float64
		ok      bool
	}{
		{"gemini-2.5-flash", 0.30, 2.50, true},
		{"models/gemini-2.5-flash-001", 0.30, 2.50, true},
		{"gemini-2.5-flash-lite", 0.10, 0.40, true}, // the longer name wins
		{"Gemini-2.5-Pro", 1.25, 10, true},
		{"gemini-2.5-flashy", 0, 0, false},
		{"gemini-test", 0, 0, false},
		{"", 0, 0, false},
	} {
		p, ok := PriceOf(tc.model)
		if ok != tc.ok || p.InPerM != tc.in || p.OutPerM != tc.out {
			t.Errorf("PriceOf(%q): got %+v %v, want %v/%v %v", tc.model, p, ok, tc.in, tc.out, tc.ok)
		}
	}
	p, _ := PriceOf("gemini-2.5-flash")
	if got := p.Cost(2_000_000, 100_000); math.Abs(got-(0.60+0.25)) > 1e-9 {
		t.Errorf("Cost: got %f, want 0.85", got)
	}
}
