package mail

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

func in(id, subject string, refs ...string) ThreadInput {
	return ThreadInput{MessageID: id, Subject: subject, References: refs}
}

// partition renders Groups as "a b | c" for readable failures.
func partition(t *Threader) string {
	var parts []string
	for _, g := range t.Groups() {
		parts = append(parts, strings.Join(g, " "))
	}
	return strings.Join(parts, " | ")
}

func TestThreaderGrouping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		inputs []ThreadInput
		want   string
	}{
		{
			name:   "reply chain",
			inputs: []ThreadInput{in("a@x", "plan"), in("b@x", "Re: plan", "a@x"), in("c@x", "Re: plan", "a@x", "b@x")},
			want:   "a@x b@x c@x",
		},
		{
			name:   "missing parent joins siblings through a dummy",
			inputs: []ThreadInput{in("b@x", "Re: q", "gone@x"), in("c@x", "Re: q", "gone@x", "b@x"), in("d@x", "other")},
			want:   "b@x c@x | d@x",
		},
		{
			name: "in-reply-to only",
			inputs: []ThreadInput{in("a@x", "hi"),
				{MessageID: "b@x", Subject: "hello again", InReplyTo: []string{"ignored@x", "a@x"}},
				{MessageID: "c@x", Subject: "unrelated", InReplyTo: []string{"zzz@x"}}},
			want: "a@x b@x | c@x",
		},
		{
			// exmh/MH: In-Reply-To: Message from Bart <bart@x> of "date." <id>
			name: "in-reply-to: the author's address before the id links nothing",
			inputs: []ThreadInput{in("p1@x", "first"), in("p2@x", "second"),
				{MessageID: "r1@x", Subject: "Re: first", InReplyTo: []string{"bart@x", "p1@x"}},
				{MessageID: "r2@x", Subject: "Re: second", InReplyTo: []string{"bart@x", "p2@x"}}},
			want: "p1@x r1@x | p2@x r2@x",
		},
		{
			name:   "references win over in-reply-to",
			inputs: []ThreadInput{in("a@x", "one"), in("b@x", "two"), {MessageID: "c@x", Subject: "three", References: []string{"a@x"}, InReplyTo: []string{"b@x"}}},
			want:   "a@x c@x | b@x",
		},
		{
			name:   "subject merge of roots",
			inputs: []ThreadInput{in("a@x", "Budget 2002"), in("b@x", "Re: budget 2002"), in("c@x", "[list] Fwd: Budget 2002"), in("d@x", "Budget 2003")},
			want:   "a@x b@x c@x | d@x",
		},
		{
			name:   "no subject merge for replies with parents",
			inputs: []ThreadInput{in("a@x", "status"), in("p@x", "other"), in("b@x", "Re: status", "p@x")},
			want:   "a@x | b@x p@x",
		},
		{
			name:   "empty base subjects never merge",
			inputs: []ThreadInput{in("a@x", ""), in("b@x", "Re:"), in("c@x", "  ")},
			want:   "a@x | b@x | c@x",
		},
		{
			name:   "reference loop",
			inputs: []ThreadInput{in("a@x", "l", "b@x"), in("b@x", "l", "a@x"), in("c@x", "x", "c@x")},
			want:   "a@x b@x | c@x",
		},
		{
			name:   "case-different ids are one message",
			inputs: []ThreadInput{in("<ABC@x>", "s"), in("d@x", "Re: s", "<abc@X>"), in("abc@x", "s")},
			want:   "ABC@x d@x",
		},
		{
			name:   "conflicting references join",
			inputs: []ThreadInput{in("m1@x", "a", "r1@x", "c@x"), in("m2@x", "b", "r2@x", "c@x")},
			want:   "m1@x m2@x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := NewThreader()
			for _, x := range tt.inputs {
				th.Add(x)
			}
			if got := partition(th); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			// Same answer in reverse order, with the same thread ids.
			rev := NewThreader()
			for _, x := range slices.Backward(tt.inputs) {
				rev.Add(x)
			}
			if got := partition(rev); got != tt.want {
				t.Errorf("reversed: got %q, want %q", got, tt.want)
			}
			for _, x := range tt.inputs {
				if a, b := th.ThreadID(x.MessageID), rev.ThreadID(x.MessageID); a != b || a == "" {
					t.Errorf("ThreadID(%q): got %q forward and %q reversed, want equal and non-empty", x.MessageID, a, b)
				}
			}
		})
	}
}

func TestThreaderMergedIDs(t *testing.T) {
	t.Parallel()
	th := NewThreader()
	ta, _ := th.Add(in("a@x", "one"))
	tc, _ := th.Add(in("c@x", "two", "b@x"))
	if ta == tc {
		t.Fatalf("got one thread %q for unrelated messages, want two", ta)
	}
	// b links a and c: one of the two old ids must be reported merged.
	tb, merged := th.Add(in("b@x", "Re: one", "a@x"))
	for _, id := range []string{"a@x", "b@x", "c@x"} {
		if got := th.ThreadID(id); got != tb {
			t.Errorf("ThreadID(%q): got %q, want %q", id, got, tb)
		}
	}
	var old []string
	for _, id := range []string{ta, tc} {
		if id != tb {
			old = append(old, id)
		}
	}
	slices.Sort(old)
	if !slices.Equal(merged, old) {
		t.Errorf("merged: got %q, want %q", merged, old)
	}
	if got := th.ThreadID("unknown@x"); got != "" {
		t.Errorf("ThreadID(unknown): got %q, want empty", got)
	}
	if got := th.ThreadID("gone@x"); got != "" {
		t.Errorf("ThreadID of a dummy: got %q, want empty", got)
	}
	// Re-adding is idempotent.
	if id, merged := th.Add(in("b@x", "Re: one", "a@x")); id != tb || len(merged) != 0 {
		t.Errorf("re-add: got %q %q, want %q and nothing merged", id, merged, tb)
	}
	if !strings.HasPrefix(tb, "t") || len(tb) != 17 {
		t.Errorf("thread id %q: want \"t\" + 16 hex digits", tb)
	}
}

// A reply whose parent arrives later keeps the thread id once the set is
// complete, and the id that went away is reported.
func TestThreaderParentArrivesLate(t *testing.T) {
	t.Parallel()
	th := NewThreader()
	t1, _ := th.Add(in("child@x", "Re: q", "parent@x"))
	t2, merged := th.Add(in("parent@x", "q", "grand@x"))
	ref := NewThreader()
	ref.Add(in("parent@x", "q", "grand@x"))
	want, _ := ref.Add(in("child@x", "Re: q", "parent@x"))
	if t2 != want {
		t.Errorf("got thread %q, want %q (as in the other order)", t2, want)
	}
	if t1 != t2 && !slices.Contains(merged, t1) {
		t.Errorf("thread id changed from %q to %q, but merged is %q", t1, t2, merged)
	}
}

func TestThreaderConcurrent(t *testing.T) {
	t.Parallel()
	th := NewThreader()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := fmt.Sprintf("m%d-%d@x", w, i)
				th.Add(in(id, "s", fmt.Sprintf("root%d@x", i%10)))
				th.ThreadID(id)
			}
		}()
	}
	wg.Wait()
	if got := len(th.Groups()); got != 10 {
		t.Errorf("got %d threads, want 10", got)
	}
}

// TestThreaderOrderIndependenceCorpus: the SpamAssassin ham added in
// random orders (4; testsize: 2 under -race) gives the partition and the
// thread ids of insertion order, and a caller relabelling its records by
// the merged lists Add returns ends with those ids.
func TestThreaderOrderIndependenceCorpus(t *testing.T) {
	t.Parallel()
	inputs := hamInputs(t)
	ref := NewThreader()
	for _, x := range inputs {
		ref.Add(x)
	}
	groups := ref.Groups()
	multi := 0
	for _, g := range groups {
		if len(g) > 1 {
			multi++
		}
	}
	if multi < 100 {
		t.Errorf("got %d multi-message threads in %d messages, want at least 100 (the ham holds list threads)", multi, len(inputs))
	}
	t.Logf("%d messages, %d threads, %d with more than one message", len(inputs), len(groups), multi)
	want := partition(ref)
	for seed := range uint64(testsize.N(4, 2)) {
		rng := rand.New(rand.NewPCG(seed, seed+1))
		order := rng.Perm(len(inputs))
		th := NewThreader()
		// What a caller does: store the id Add returns and relabel stored
		// records when their id shows up in a later merged list (every
		// record labelled m, found through an index of them by label:
		// byLabel[m] holds each record ever labelled m, so those still
		// labelled m are all of them).
		label := make(map[string]string, len(inputs))
		byLabel := map[string][]string{}
		for _, i := range order {
			tid, merged := th.Add(inputs[i])
			for _, m := range merged {
				if m == tid {
					continue
				}
				for _, k := range byLabel[m] {
					if label[k] == m {
						label[k] = tid
						byLabel[tid] = append(byLabel[tid], k)
					}
				}
				delete(byLabel, m)
			}
			label[inputs[i].MessageID] = tid
			byLabel[tid] = append(byLabel[tid], inputs[i].MessageID)
		}
		if got := partition(th); got != want {
			t.Fatalf("seed %d: partition differs from insertion order", seed)
		}
		for _, x := range inputs {
			got, exp := th.ThreadID(x.MessageID), ref.ThreadID(x.MessageID)
			if got != exp {
				t.Fatalf("seed %d: ThreadID(%q) got %q, want %q", seed, x.MessageID, got, exp)
			}
			if label[x.MessageID] != exp {
				t.Fatalf("seed %d: relabelled id of %q is %q, want %q", seed, x.MessageID, label[x.MessageID], exp)
			}
		}
	}
}

// TestThreaderMembers: Members lists the messages of a thread (not the
// missing parents it only knows by reference), capped, with the count.
func TestThreaderMembers(t *testing.T) {
	t.Parallel()
	th := NewThreader()
	th.Add(ThreadInput{MessageID: "<a@x>", Subject: "Plan"})
	th.Add(ThreadInput{MessageID: "<b@x>", InReplyTo: []string{"<a@x>"}, References: []string{"<a@x>"}})
	th.Add(ThreadInput{MessageID: "<c@x>", References: []string{"<missing@x>", "<b@x>"}})
	th.Add(ThreadInput{MessageID: "<other@x>", Subject: "Something else"})
	ids, total := th.Members("<B@x>", 0)
	slices.Sort(ids)
	if total != 3 || !slices.Equal(ids, []string{"a@x", "b@x", "c@x"}) {
		t.Errorf("Members: %v, %d; want a, b, c and 3", ids, total)
	}
	if ids, total := th.Members("c@x", 2); len(ids) != 2 || total != 3 {
		t.Errorf("Members capped at 2: %v, %d", ids, total)
	}
	for _, id := range []string{"missing@x", "nobody@x", ""} {
		if ids, total := th.Members(id, 0); ids != nil || total != 0 {
			t.Errorf("Members(%q): %v, %d; want none", id, ids, total)
		}
	}
}

// TestThreadOfFollowsMerges: ThreadOf gives the id Add gave, then the
// merged id once a later message links the thread to another, for a
// message with an id and for one without (keyed by subject and date);
// a message never added has none.
func TestThreadOfFollowsMerges(t *testing.T) {
	t.Parallel()
	th := NewThreader()
	date := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	noID := ThreadInput{Subject: "Minutes", Date: date}
	a := ThreadInput{MessageID: "<a@x>", Subject: "Plans"}
	idA, _ := th.Add(a)
	idN, _ := th.Add(noID)
	if got := th.ThreadOf(a); got != idA {
		t.Fatalf("ThreadOf(a) = %q, want %q", got, idA)
	}
	if got := th.ThreadOf(noID); got != idN || got == "" {
		t.Fatalf("ThreadOf(no id) = %q, want %q", got, idN)
	}
	// A reply to a whose subject merges with the id-less root.
	merged, _ := th.Add(ThreadInput{MessageID: "<c@x>", Subject: "Minutes", References: nil})
	if merged != th.ThreadOf(noID) {
		t.Fatalf("after a subject merge ThreadOf(no id) = %q, want %q", th.ThreadOf(noID), merged)
	}
	link, _ := th.Add(ThreadInput{MessageID: "<d@x>", References: []string{"<a@x>", "<c@x>"}})
	for _, in := range []ThreadInput{a, noID} {
		if got := th.ThreadOf(in); got != link {
			t.Errorf("ThreadOf(%+v) = %q after the link, want %q", in, got, link)
		}
	}
	if got := th.ThreadOf(ThreadInput{MessageID: "<never@x>"}); got != "" {
		t.Errorf("ThreadOf(never added) = %q, want empty", got)
	}
}
