package mcpserver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

type rec struct {
	at time.Time
	id string
}

func recKey(r *rec) key { return key{at: r.at, id: r.id} }

// TestStreamPageMatchesSortAndCut: keeping only a page while the items
// stream past in any order gives the page and cursor that sorting them
// all and cutting does, for both orders, every cursor and limit.
func TestStreamPageMatchesSortAndCut(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 200 {
		n := rng.IntN(60)
		items := make([]rec, n)
		for i := range items {
			at := base.Add(time.Duration(rng.IntN(20)) * time.Minute) // many ties
			if rng.IntN(10) == 0 {
				at = time.Time{}
			}
			items[i] = rec{at: at, id: fmt.Sprintf("id%03d", rng.IntN(1000))}
		}
		slices.SortFunc(items, func(a, b rec) int { return compareKeys(recKey(&a), recKey(&b)) })
		items = slices.CompactFunc(items, func(a, b rec) bool { return a.id == b.id }) // ids are unique
		for _, desc := range []bool{false, true} {
			sorted := slices.Clone(items)
			sortKeyed(sorted, recKey, desc)
			p := page{tool: "t", fp: "f", limit: 1 + rng.IntN(8)}
			if len(sorted) > 0 && rng.IntN(3) > 0 {
				k := recKey(&sorted[rng.IntN(len(sorted))])
				p.after = &k
			}
			want, wantNext := cutPage(sorted, recKey, desc, p, func(r *rec) string { return r.id })
			top := streamPage(p, recKey, desc)
			for _, i := range rng.Perm(len(items)) {
				top.add(items[i])
			}
			got, gotNext := finishPage(top, p, func(r *rec) string { return r.id })
			if !slices.Equal(got, want) || gotNext != wantNext {
				t.Fatalf("round %d desc %v limit %d: got %v next %q; want %v next %q", round, desc, p.limit, got, gotNext, want, wantNext)
			}
		}
	}
}

// TestCursorRoundTrip: a cursor decodes to the key it was made from, for
// the tool and arguments it was made for only.
func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	fp := fingerprint("pending", "", "work")
	for _, k := range []key{{at: time.Date(2026, 3, 1, 2, 3, 4, 5, time.UTC), id: "q_1"}, {id: "personal/INBOX/1/2"}, {at: time.Unix(0, 1).UTC(), id: strings.Repeat("x", 900)}} {
		p := page{tool: "queue_list", fp: fp, limit: 5}
		c := p.cursor(k)
		got, err := parsePage("queue_list", fp, c, 5)
		if err != nil || got.after == nil || !got.after.at.Equal(k.at) || got.after.id != k.id {
			t.Errorf("%+v: %v, %+v", k, err, got.after)
		}
		if _, err := parsePage("search_mail", fp, c, 5); err == nil {
			t.Errorf("%+v: another tool took the cursor", k)
		}
		if _, err := parsePage("queue_list", fingerprint("sent", "", "work"), c, 5); err == nil {
			t.Errorf("%+v: other arguments took the cursor", k)
		}
	}
	if fingerprint("a", "bc") == fingerprint("ab", "c") {
		t.Error("fingerprint does not separate its arguments")
	}
}
