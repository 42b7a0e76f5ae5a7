package e2e

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/mailagent/mailagent/internal/mail"
)

// Why a header link is in the RFC 5256 model's Dropped list: the reasons
// RFC 5256 REFERENCES step 1, run in mailbox order as Dovecot runs it,
// leaves out a link that mail.Threader keeps (mail.Threader keeps every
// link, so that a thread never depends on the order mail arrived in).
const (
	// DropFirstParent: the child already had a parent from an earlier
	// message's References (step 1A: "If a message already has a parent,
	// don't change the existing link").
	DropFirstParent = "child already had a parent (first wins)"
	// DropOwnReferences: a link another message's References gave this
	// message, replaced when the message itself came with another parent
	// (step 1C: the message's own last reference is its parent).
	DropOwnReferences = "replaced by the message's own References"
	// DropLoop: the link would have made a loop (step 1A/1C).
	DropLoop = "would make a loop"
	// DropRepeatedID: a later message with a Message-ID already seen is
	// threaded as having none (step 1: Dovecot keeps the first copy's id);
	// mail.Threader treats the copies as one message.
	DropRepeatedID = "repeated Message-ID (the later copy has no id)"
	// DropInReplyToLast: no References and an In-Reply-To with more than
	// one id: RFC 5256 (and Dovecot) take the first, mail.ParentIDs the
	// last (MH and exmh write the replied-to author's address first).
	DropInReplyToLast = "In-Reply-To's last id (RFC 5256 takes the first)"
	// ReasonSubjectRoot: two messages whose own headers name no parent,
	// with the same base subject: mail.Threader merges them (step 5);
	// THREAD=REFERENCES does not when another message's References gave
	// one of them a parent first (see CheckRefs).
	ReasonSubjectRoot = "subject merge of parentless messages (step 5, whatever others reference)"
)

// RefsLink is one parent→child link between message-id keys (mail.IDKey)
// that a message's headers make, with the UID of the message whose
// headers wrote it and, for a dropped link, why.
type RefsLink struct {
	Parent, Child string
	UID           uint32
	Reason        string
}

// RefsInput is one message of the mailbox, in UID order.
type RefsInput struct {
	UID uint32
	M   *mail.Message
}

// RefsModel is RFC 5256 REFERENCES step 1 (the parent links, no subject
// merging: Dovecot's THREAD=REFS) computed on a mailbox's messages in UID
// order, as Dovecot's incremental threader computes it.
type RefsModel struct {
	// Node is each UID's node key: the IDKey of its Message-ID, or a key
	// of its own when it has none or repeats an earlier one.
	Node map[uint32]string
	// Kept are the links the model keeps (every node's final parent).
	Kept []RefsLink
	// Dropped are the header links mail.Threader makes and the model does
	// not keep, each with its reason.
	Dropped []RefsLink
}

// ModelRefs runs the model over msgs, which must be in UID order. For each
// message: its Message-ID names its node (a repeated one, or none, gets a
// node of its own); its references are the References ids, or with none
// the first In-Reply-To id; each reference is linked to the next, and the
// message to its last reference, keeping a node's first parent unless the
// message itself names another, and never making a loop.
func ModelRefs(msgs []RefsInput) RefsModel {
	parent := map[string]string{}
	exists := map[string]bool{}
	m := RefsModel{Node: map[uint32]string{}}
	var tried []RefsLink
	ancestor := func(n, a string) bool { // a is n or one of n's ancestors
		for seen := 0; n != ""; seen++ {
			if n == a {
				return true
			}
			if seen > len(parent) {
				return false
			}
			n = parent[n]
		}
		return false
	}
	link := func(p, c string, uid uint32) {
		l := RefsLink{Parent: p, Child: c, UID: uid}
		switch {
		case ancestor(p, c):
			l.Reason = DropLoop
		case parent[c] == p:
		case parent[c] == "":
			parent[c] = p
		default:
			l.Reason = DropFirstParent
		}
		tried = append(tried, l)
	}
	for _, in := range msgs {
		key := mail.IDKey(in.M.MessageID)
		own := "<uid " + strconv.FormatUint(uint64(in.UID), 10) + ">" // no IDKey has a space
		if key != "" && exists[key] {
			// The copies are one message to mail.Threader: the link
			// between them is one the model never makes.
			m.Dropped = append(m.Dropped, RefsLink{Parent: key, Child: own, UID: in.UID, Reason: DropRepeatedID})
			key = ""
		}
		if key == "" {
			key = own
		}
		exists[key] = true
		m.Node[in.UID] = key
		var refs []string
		for _, r := range in.M.References {
			if k := mail.IDKey(r); k != "" {
				refs = append(refs, k)
			}
		}
		if len(refs) == 0 {
			var irt []string
			for _, r := range in.M.InReplyTo {
				if k := mail.IDKey(r); k != "" {
					irt = append(irt, k)
				}
			}
			if len(irt) > 0 {
				refs = irt[:1]
			}
			if len(irt) > 1 && irt[len(irt)-1] != irt[0] {
				m.Dropped = append(m.Dropped, RefsLink{Parent: irt[len(irt)-1], Child: key, UID: in.UID, Reason: DropInReplyToLast})
			}
		}
		for i := 1; i < len(refs); i++ {
			link(refs[i-1], refs[i], in.UID)
		}
		p := ""
		if len(refs) > 0 {
			p = refs[len(refs)-1]
		}
		if old := parent[key]; old != "" && old != p {
			parent[key] = "" // its own References decide its parent
		}
		if p != "" {
			link(p, key, in.UID)
		}
	}
	for c, p := range parent {
		if p != "" {
			m.Kept = append(m.Kept, RefsLink{Parent: p, Child: c})
		}
	}
	slices.SortFunc(m.Kept, func(a, b RefsLink) int { return cmp.Compare(a.Child, b.Child) })
	for _, l := range tried {
		if parent[l.Child] == l.Parent {
			continue
		}
		if l.Reason == "" {
			l.Reason = DropOwnReferences
		}
		m.Dropped = append(m.Dropped, l)
	}
	return m
}

// Components returns, for each UID of the model, a key naming its
// connected component over the kept links (and, with extra, over those
// links too): the model's THREAD=REFS partition.
func (m RefsModel) Components(extra ...RefsLink) map[uint32]string {
	uf := unionFind{}
	for _, l := range m.Kept {
		uf.union(l.Parent, l.Child)
	}
	for _, l := range extra {
		uf.union(l.Parent, l.Child)
	}
	out := make(map[uint32]string, len(m.Node))
	for uid, n := range m.Node {
		out[uid] = uf.find(n)
	}
	return out
}

// RefsCheck compares a threader's co-threaded pairs with Dovecot's
// threads of the same mailbox through the model (CheckRefs).
type RefsCheck struct {
	// ModelDiff counts the messages whose THREAD=REFS thread the model
	// composes differently from Dovecot's: 0 makes the comparison exact.
	ModelDiff int
	// AllLinksDiff is ModelDiff with every dropped link kept, the control
	// that the dropped links matter (it is not 0 when Dovecot drops any
	// link that changes a thread).
	AllLinksDiff int
	// Dropped counts, by reason, the dropped links that join two threads
	// Dovecot keeps apart.
	Dropped map[string]int
	// ExtraPairs counts the threader's pairs Dovecot co-threads under
	// neither REFS nor REFERENCES.
	ExtraPairs int
	// Unexplained are the pairs among those that no dropped link joins
	// either, sorted.
	Unexplained [][2]uint32
	// PlantedCaught reports the control that a pair of two messages that
	// nothing joins is found unexplained.
	PlantedCaught bool
}

// CheckRefs runs ModelRefs over msgs (in UID order) and explains each of
// ours (a threader's co-threaded pairs, lower UID first) that Dovecot's
// THREAD=REFS and THREAD=REFERENCES partitions (UID → thread key) do not
// co-thread: a pair is explained when Dovecot's threads joined by the
// model's dropped links hold both messages.
func CheckRefs(msgs []RefsInput, refs, references map[uint32]string, ours map[[2]uint32]bool) RefsCheck {
	model := ModelRefs(msgs)
	c := RefsCheck{Dropped: map[string]int{}}
	c.ModelDiff = diffCount(model.Components(), refs)
	c.AllLinksDiff = diffCount(model.Components(model.Dropped...), refs)

	uf := unionFind{}
	u := func(uid uint32) string { return "<u " + strconv.FormatUint(uint64(uid), 10) + ">" }
	for _, p := range []map[uint32]string{refs, references} {
		first := map[string]uint32{}
		for uid, k := range p {
			if f, ok := first[k]; ok {
				uf.union(u(f), u(uid))
			} else {
				first[k] = uid
			}
		}
	}
	for uid, n := range model.Node {
		uf.union(u(uid), n)
	}
	for _, l := range model.Kept {
		uf.union(l.Parent, l.Child)
	}
	for _, l := range model.Dropped {
		if uf.union(l.Parent, l.Child) {
			c.Dropped[l.Reason]++
		}
	}
	// Subject merges, read as mail.Threader reads them: a message whose
	// own headers name no parent is a root, and roots with the same
	// non-empty base subject are merged (RFC 5256 step 5). RFC 5256 also
	// lets another message's References give such a message a parent
	// (first come, by mailbox order), after which THREAD=REFERENCES no
	// longer subject-merges it; mail.Threader, whose threads never depend
	// on arrival order, does not. Such joins are counted under their own
	// reason, like the dropped links above.
	bySubject := map[string]uint32{}
	for _, in := range msgs {
		if ids, _ := mail.ParentIDs(mail.InputOf(in.M)); len(ids) > 0 {
			continue
		}
		sk := mail.SubjectKey(in.M.Subject)
		if sk == "" {
			continue
		}
		if first, ok := bySubject[sk]; !ok {
			bySubject[sk] = in.UID
		} else if uf.union(u(first), u(in.UID)) {
			c.Dropped[ReasonSubjectRoot]++
		}
	}
	explained := func(a, b uint32) bool { return uf.find(u(a)) == uf.find(u(b)) }
	for p := range ours {
		if refs[p[0]] == refs[p[1]] || references[p[0]] == references[p[1]] {
			continue
		}
		c.ExtraPairs++
		if !explained(p[0], p[1]) {
			c.Unexplained = append(c.Unexplained, p)
		}
	}
	slices.SortFunc(c.Unexplained, func(a, b [2]uint32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, in := range msgs[min(1, len(msgs)):] {
		if !explained(msgs[0].UID, in.UID) {
			c.PlantedCaught = true
			break
		}
	}
	return c
}

// diffCount counts the UIDs whose group of UIDs differs between a and b.
func diffCount(a, b map[uint32]string) int {
	group := func(p map[uint32]string) map[string][]uint32 {
		g := map[string][]uint32{}
		for uid, k := range p {
			g[k] = append(g[k], uid)
		}
		for _, l := range g {
			slices.Sort(l)
		}
		return g
	}
	ga, gb := group(a), group(b)
	n := 0
	for uid, k := range a {
		if !slices.Equal(ga[k], gb[b[uid]]) {
			n++
		}
	}
	return n
}

// unionFind is a union-find over string keys.
type unionFind map[string]string

func (f unionFind) find(x string) string {
	for {
		p, ok := f[x]
		if !ok || p == x {
			return x
		}
		if gp, ok := f[p]; ok && gp != p {
			f[x] = gp
		}
		x = p
	}
}

// union joins a's and b's sets and reports whether they were apart.
func (f unionFind) union(a, b string) bool {
	ra, rb := f.find(a), f.find(b)
	if ra == rb {
		return false
	}
	if ra < rb {
		f[rb] = ra
	} else {
		f[ra] = rb
	}
	return true
}
