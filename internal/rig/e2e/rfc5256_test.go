package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
)

// refsMsg is a message with only the headers threading reads.
func refsMsg(uid uint32, id, refs, irt string) RefsInput {
	var b strings.Builder
	fmt.Fprintf(&b, "From: a@example.test\r\nSubject: s%d\r\nMessage-ID: <%s>\r\n", uid, id)
	if refs != "" {
		fmt.Fprintf(&b, "References: %s\r\n", refs)
	}
	if irt != "" {
		fmt.Fprintf(&b, "In-Reply-To: %s\r\n", irt)
	}
	b.WriteString("\r\nbody\r\n")
	return RefsInput{UID: uid, M: mail.Parse([]byte(b.String()))}
}

// TestModelRefs: each RFC 5256 step-1 rule on a mailbox made for it, as
// Dovecot applies it in UID order: which messages share a REFS thread,
// and which links are dropped, with which reason.
func TestModelRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		msgs     []RefsInput
		together [][]uint32 // the model's REFS threads with more than one message
		dropped  []string   // "parent>child: reason", sorted
	}{
		{
			name: "first parent wins",
			msgs: []RefsInput{
				refsMsg(1, "m1@x", "<p1@x> <c@x>", ""),
				refsMsg(2, "m2@x", "<p2@x> <c@x>", ""),
				refsMsg(3, "p2@x", "", ""),
			},
			together: [][]uint32{{1, 2}},
			dropped:  []string{"p2@x>c@x: " + DropFirstParent},
		},
		{
			name: "a message's own References replace the parent others gave it",
			msgs: []RefsInput{
				refsMsg(1, "m1@x", "<x@x> <c@x>", ""),
				refsMsg(2, "x@x", "", ""),
				refsMsg(3, "c@x", "<y@x>", ""),
			},
			together: [][]uint32{{1, 3}},
			dropped:  []string{"x@x>c@x: " + DropOwnReferences},
		},
		{
			name: "no loop",
			msgs: []RefsInput{
				refsMsg(1, "a@x", "<b@x>", ""),
				refsMsg(2, "b@x", "<a@x>", ""),
			},
			together: [][]uint32{{1, 2}},
			dropped:  []string{"a@x>b@x: " + DropLoop},
		},
		{
			name: "a repeated Message-ID: the later copy has none",
			msgs: []RefsInput{
				refsMsg(1, "a@x", "", ""),
				refsMsg(2, "a@x", "", ""),
			},
			dropped: []string{"a@x><uid 2>: " + DropRepeatedID},
		},
		{
			name: "In-Reply-To: the first id, not the last",
			msgs: []RefsInput{
				refsMsg(1, "p@x", "", ""),
				refsMsg(2, "r@x", "", "<author@x> <p@x>"),
				refsMsg(3, "s@x", "", "<author@x> <q@x>"),
			},
			together: [][]uint32{{2, 3}}, // through the author's address
			dropped:  []string{"p@x>r@x: " + DropInReplyToLast, "q@x>s@x: " + DropInReplyToLast},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := ModelRefs(tt.msgs)
			groups := map[string][]uint32{}
			for uid, k := range m.Components() {
				groups[k] = append(groups[k], uid)
			}
			var together [][]uint32
			for _, g := range groups {
				if len(g) > 1 {
					slices.Sort(g)
					together = append(together, g)
				}
			}
			slices.SortFunc(together, func(a, b []uint32) int { return int(a[0]) - int(b[0]) })
			if fmt.Sprint(together) != fmt.Sprint(tt.together) {
				t.Errorf("threads: got %v, want %v", together, tt.together)
			}
			var dropped []string
			for _, l := range m.Dropped {
				dropped = append(dropped, l.Parent+">"+l.Child+": "+l.Reason)
			}
			slices.Sort(dropped)
			if !slices.Equal(dropped, tt.dropped) {
				t.Errorf("dropped: got %q, want %q", dropped, tt.dropped)
			}
		})
	}
}

// TestCheckRefs: a pair Dovecot keeps apart only because of a dropped
// link is explained; a pair nothing joins is not, and is reported.
func TestCheckRefs(t *testing.T) {
	t.Parallel()
	msgs := []RefsInput{
		refsMsg(1, "m1@x", "<p1@x> <c@x>", ""),
		refsMsg(2, "m2@x", "<p2@x> <c@x>", ""),
		refsMsg(3, "p2@x", "", ""),
		refsMsg(4, "lone@x", "", ""),
	}
	// Dovecot's answer for this mailbox: 1 and 2 together, 3 and 4 alone.
	refs := map[uint32]string{1: "a", 2: "a", 3: "b", 4: "c"}
	ours := map[[2]uint32]bool{{1, 2}: true, {1, 3}: true, {2, 3}: true, {3, 4}: true}
	c := CheckRefs(msgs, refs, refs, ours)
	if c.ModelDiff != 0 || c.AllLinksDiff == 0 {
		t.Errorf("model: got %d messages differing (%d with every link), want 0 (and more than 0)", c.ModelDiff, c.AllLinksDiff)
	}
	if c.ExtraPairs != 3 {
		t.Errorf("extra pairs: got %d, want 3", c.ExtraPairs)
	}
	if want := [][2]uint32{{3, 4}}; !slices.Equal(c.Unexplained, want) {
		t.Errorf("unexplained: got %v, want %v", c.Unexplained, want)
	}
	if c.Dropped[DropFirstParent] != 1 || !c.PlantedCaught {
		t.Errorf("got dropped %v, planted caught %v; want 1 first-parent link, true", c.Dropped, c.PlantedCaught)
	}
	// Dovecot composing otherwise than the model is reported.
	if c := CheckRefs(msgs, map[uint32]string{1: "a", 2: "b", 3: "c", 4: "d"}, refs, ours); c.ModelDiff == 0 {
		t.Errorf("a REFS partition the model does not compose: got ModelDiff 0, want more")
	}
}

// TestCheckRefsSubjectRoots: two messages whose own headers name no parent
// and share a base subject are one thread for mail.Threader (step 5);
// THREAD=REFERENCES keeps them apart when another message's References
// gave one of them a parent first. Such a pair is explained under its own
// reason; the same pair with different subjects, or with a parent of its
// own, is not.
func TestCheckRefsSubjectRoots(t *testing.T) {
	t.Parallel()
	msg := func(uid uint32, id, subject, refs string) RefsInput {
		raw := fmt.Sprintf("From: a@example.test\r\nSubject: %s\r\nMessage-ID: <%s>\r\n", subject, id)
		if refs != "" {
			raw += "References: " + refs + "\r\n"
		}
		return RefsInput{UID: uid, M: mail.Parse([]byte(raw + "\r\nbody\r\n"))}
	}
	// 1 and 2 name no parent, same base subject; 3 makes 2 a child of x.
	msgs := []RefsInput{
		msg(1, "a@x", "RE: [list] Dell GX260", ""),
		msg(2, "b@x", "RE: [list] Dell GX260", ""),
		msg(3, "c@x", "Sparc (was: Dell GX260)", "<x@x> <b@x>"),
	}
	dovecot := map[uint32]string{1: "a", 2: "b", 3: "b"}
	ours := map[[2]uint32]bool{{1, 2}: true, {1, 3}: true, {2, 3}: true}
	c := CheckRefs(msgs, dovecot, dovecot, ours)
	if len(c.Unexplained) != 0 || c.Dropped[ReasonSubjectRoot] != 1 {
		t.Errorf("got unexplained %v, dropped %v; want none, one subject merge", c.Unexplained, c.Dropped)
	}
	// Control: other subjects, and nothing explains the pair.
	msgs[1] = msg(2, "b@x", "something else", "")
	if c := CheckRefs(msgs, dovecot, dovecot, ours); len(c.Unexplained) != 2 || c.Dropped[ReasonSubjectRoot] != 0 {
		t.Errorf("different subjects: got unexplained %v, dropped %v; want (1,2) and (1,3), no subject merge", c.Unexplained, c.Dropped)
	}
	// Control: a message with a parent of its own is no subject root.
	msgs[1] = msg(2, "b@x", "RE: [list] Dell GX260", "<y@x>")
	if c := CheckRefs(msgs, dovecot, dovecot, ours); len(c.Unexplained) != 2 {
		t.Errorf("a message with its own parent: got unexplained %v, want (1,2) and (1,3)", c.Unexplained)
	}
}
