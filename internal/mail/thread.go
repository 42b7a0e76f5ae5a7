package mail

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// ThreadInput is what the Threader needs to know about one message.
type ThreadInput struct {
	MessageID  string
	InReplyTo  []string
	References []string
	Subject    string
	Date       time.Time
}

// InputOf returns the ThreadInput of a parsed message. A nil message gives
// the zero ThreadInput.
func InputOf(m *Message) ThreadInput {
	if m == nil {
		return ThreadInput{}
	}
	return ThreadInput{
		MessageID:  m.MessageID,
		InReplyTo:  m.InReplyTo,
		References: m.References,
		Subject:    m.Subject,
		Date:       m.Date,
	}
}

// ParentIDs returns the ids a message names as its ancestors, oldest
// first, as the Threader links them, and which header they came from
// ("references", "in-reply-to", or "" for none): the References list,
// else the last id of In-Reply-To.
//
// The last, not the first as RFC 5256 says: In-Reply-To in the wild
// carries the replied-to author's address in angle brackets before the
// message id (MH and exmh write `Message from Name <addr> of "date."
// <id>`), and taking the first links every reply to one author into one
// thread through a dummy parent named by that address (Dovecot does not;
// TestThreadingAgreesWithDovecot measures it). A well-formed In-Reply-To
// with one id gives the same parent either way.
func ParentIDs(in ThreadInput) (ids []string, from string) {
	if len(in.References) > 0 {
		return in.References, "references"
	}
	if n := len(in.InReplyTo); n > 0 {
		return in.InReplyTo[n-1:], "in-reply-to"
	}
	return nil, ""
}

// Threader groups messages into threads with RFC 5256 REFERENCES semantics,
// in memory. It is safe for concurrent use.
//
// Threads are the connected components of a graph whose edges each come
// from one message alone, so the grouping, and every thread id, depends
// only on the set of messages added, never on their order:
//
//   - Each id in References is linked to the next, and the message to its
//     last reference; with no References, to its In-Reply-To parent
//     (ParentIDs).
//     Missing parents are dummy nodes. Ids are compared by IDKey. A message
//     that references itself gets no parent from that reference.
//   - A message with no parent reference at all is a root in RFC 5256 terms;
//     roots whose base subjects (SubjectKey) are equal and non-empty are
//     merged (RFC 5256 step 5), whether or not either subject is a reply.
//
// The thread id is "t" plus the first 16 hex digits of the SHA-256 of the
// smallest root key in the component: the IDKey of a node nothing links a
// parent to, or "subj:"+SubjectKey for a subject merge. A component with no
// root (a reference loop) uses its smallest key. Loops never hang and never
// split a thread.
//
// Where this differs from RFC 5256 on purpose: RFC 5256 also subject-merges
// a root that is a dummy (a missing message) by the subject of its first
// child, and a reply becomes a root when all its ancestors are missing. Both
// depend on which messages are present, so a thread could split when a
// message arrives; threads here only ever merge, which is what lets Add
// report merged ids that callers relabel. Conflicting References headers
// are joined rather than resolved by arrival order. Tree shape (which
// reply-root becomes whose child) is not exposed, so only membership is
// computed.
type Threader struct {
	mu    sync.Mutex
	index map[string]int32 // key → node
	nodes []tnode
	comps map[int32]*tcomp // union-find root → component data
	msgs  int              // nodes that are messages (not dummies)

	// journal, while a Rebuild loads, records every Add so that none is
	// lost when the new contents replace the old.
	journal    []journaled
	rebuilding bool

	merges sync.Mutex // see LockMerges
}

// journaled is one Add (self) or Link made while a Rebuild loads.
type journaled struct {
	in   ThreadInput
	self bool
}

type tnode struct {
	key       string
	id        string // message id as added (smallest form when added twice); "" for a dummy or subject node
	uf        int32  // union-find parent
	hasParent bool
}

type tcomp struct {
	members []int32
	minRoot string // smallest key of a parentless member, "" if none
	minAll  string // smallest key of any member
	tid     string
	hasMsg  bool
}

// NewThreader returns an empty Threader.
func NewThreader() *Threader {
	return &Threader{index: map[string]int32{}, comps: map[int32]*tcomp{}}
}

// Add records a message and returns its thread id now, plus the thread ids
// that were merged into it by this Add (ids callers have seen before on
// other messages and must relabel to threadID), sorted. Adding the same
// message id again adds its links, if any are new, and is otherwise a no-op.
// A message with an empty id is keyed by its subject and date.
func (t *Threader) Add(in ThreadInput) (threadID string, merged []string) {
	return t.add(in, true)
}

// Link records only the links between the ids a message names as its
// ancestors (ParentIDs), not the message itself, and returns the thread
// id of its nearest parent ("" when it names none) and the thread ids
// that were merged into it, as Add does. It is for a message whose own
// id is not known yet: one with no Message-ID, which the full parse
// keys by a hash of its body. Adding that message later with Add joins
// it to one existing thread at most, so it reports no merge.
func (t *Threader) Link(in ThreadInput) (threadID string, merged []string) {
	return t.add(in, false)
}

func (t *Threader) add(in ThreadInput, self bool) (threadID string, merged []string) {
	t.mu.Lock()
	defer t.mu.Unlock()

	key, id := nodeKey(in)
	// Parent chain (ParentIDs); self-links dropped.
	var chain []string
	src, _ := ParentIDs(in)
	for _, r := range src {
		k := IDKey(r)
		if k == "" || k == key || (len(chain) > 0 && chain[len(chain)-1] == k) {
			continue
		}
		chain = append(chain, k)
	}

	// Thread ids visible before this Add, of every component it touches.
	before := map[string]bool{}
	look := func(k string) {
		if n, ok := t.index[k]; ok {
			if c := t.comps[t.find(n)]; c.hasMsg {
				before[c.tid] = true
			}
		}
	}
	if t.rebuilding {
		t.journal = append(t.journal, journaled{in, self})
	}
	if !self {
		if len(chain) == 0 {
			return "", nil
		}
		for _, k := range chain {
			look(k)
		}
		for i, k := range chain {
			n := t.node(k)
			if i > 0 {
				t.union(t.index[chain[i-1]], n)
				t.setParent(n)
			}
		}
		return t.reported(t.index[chain[len(chain)-1]], before)
	}
	look(key)
	for _, k := range chain {
		look(k)
	}
	subj := ""
	if len(chain) == 0 {
		if sk := SubjectKey(in.Subject); sk != "" {
			subj = "subj:" + sk
			look(subj)
		}
	}

	m := t.node(key)
	if n := &t.nodes[m]; n.id == "" || id < n.id {
		if n.id == "" {
			t.msgs++
		}
		n.id = id
	}
	mc := t.comps[t.find(m)]
	if !mc.hasMsg {
		mc.hasMsg = true
		t.refresh(t.find(m))
	}
	for i, k := range chain {
		n := t.node(k)
		if i > 0 {
			t.union(t.index[chain[i-1]], n)
			t.setParent(n)
		}
	}
	if len(chain) > 0 {
		t.union(t.index[chain[len(chain)-1]], m)
		t.setParent(m)
	}
	if subj != "" {
		t.union(t.node(subj), m)
	}

	return t.reported(m, before)
}

// reported is n's thread id and the ids in before that it replaced,
// sorted.
func (t *Threader) reported(n int32, before map[string]bool) (threadID string, merged []string) {
	threadID = t.comps[t.find(n)].tid
	for tid := range before {
		if tid != threadID {
			merged = append(merged, tid)
		}
	}
	sort.Strings(merged)
	return threadID, merged
}

// Len returns how many messages the Threader holds (ids it was given, not
// the missing parents it only knows by reference).
func (t *Threader) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.msgs
}

// ErrRebuilding is returned by Rebuild while another Rebuild runs.
var ErrRebuilding = errors.New("threader: a rebuild is already running")

// Rebuild replaces the Threader's contents by the messages load adds, in
// the order it adds them: this is how a long-running Threader is bounded
// (evicting what lies outside a window) since links cannot be removed
// from it one by one. Callers load the window their start-up uses (for
// mailagent: the newest 25,000 messages of the last 180 days).
//
// load runs without the lock held, so Add and ThreadID go on meanwhile:
// every message added during the load is added again to the new contents,
// so none is lost. A message kept keeps its thread id whenever its
// thread's root is kept or still referenced by a kept message (the
// References chain carries the root's id); a thread whose root fell out
// of the window may get a new id, as after a restart. If load fails, the
// contents are unchanged.
func (t *Threader) Rebuild(load func(add func(ThreadInput)) error) error {
	t.mu.Lock()
	if t.rebuilding {
		t.mu.Unlock()
		return ErrRebuilding
	}
	t.rebuilding, t.journal = true, nil
	t.mu.Unlock()

	fresh := NewThreader()
	err := load(func(in ThreadInput) { fresh.Add(in) })

	t.mu.Lock()
	defer t.mu.Unlock()
	journal := t.journal
	t.rebuilding, t.journal = false, nil
	if err != nil {
		return err
	}
	for _, j := range journal {
		fresh.add(j.in, j.self)
	}
	t.index, t.nodes, t.comps, t.msgs = fresh.index, fresh.nodes, fresh.comps, fresh.msgs
	return nil
}

// LockMerges holds off other callers of LockMerges until unlock is
// called. It orders the callers that store thread ids: one that applies
// the merges Add reports (relabelling stored records) holds it across
// the Add and the relabels, and one that stores a record under the id
// ThreadOf gives holds it across both, so that no merge falls between
// reading a record's id and storing it. It is not held by Add or ThreadOf
// themselves.
func (t *Threader) LockMerges() (unlock func()) {
	t.merges.Lock()
	return t.merges.Unlock
}

// nodeKey is the key and the id a message is added under. A message with
// an empty id is keyed by its subject and date.
func nodeKey(in ThreadInput) (key, id string) {
	id = NormalizeID(in.MessageID)
	key = strings.ToLower(id)
	if key == "" {
		key = "noid:" + in.Date.UTC().Format(time.RFC3339) + ":" + SubjectKey(in.Subject)
		id = key
	}
	return key, id
}

// ThreadOf returns the current thread id of a message added before (the
// id Add gave it, or the one a later Add merged it into), or "" for a
// message never added. Unlike ThreadID it finds a message with no id.
func (t *Threader) ThreadOf(in ThreadInput) string {
	key, _ := nodeKey(in)
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.index[key]
	if !ok || t.nodes[n].id == "" {
		return ""
	}
	return t.comps[t.find(n)].tid
}

// ThreadID returns the current thread id of a message added before, or ""
// for an unknown id.
func (t *Threader) ThreadID(messageID string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.index[IDKey(messageID)]
	if !ok || t.nodes[n].id == "" {
		return ""
	}
	return t.comps[t.find(n)].tid
}

// Members returns up to limit ids of the messages in messageID's thread
// (in the form they were added, in no particular order; limit <= 0: all)
// and how many messages the thread holds. An unknown id gives none and 0.
func (t *Threader) Members(messageID string, limit int) (ids []string, total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.index[IDKey(messageID)]
	if !ok || t.nodes[n].id == "" {
		return nil, 0
	}
	for _, m := range t.comps[t.find(n)].members {
		if id := t.nodes[m].id; id != "" {
			total++
			if limit <= 0 || len(ids) < limit {
				ids = append(ids, id)
			}
		}
	}
	return ids, total
}

// Groups returns every thread as the ids of its messages (in the form they
// were added), each group sorted by IDKey and the groups sorted by their
// first id, so equal partitions compare equal.
func (t *Threader) Groups() [][]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Each id is lowercased once, not in every comparison of the sorts.
	type keyed struct{ low, id string }
	byKey := func(a, b keyed) int {
		if c := strings.Compare(a.low, b.low); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	}
	var groups [][]keyed
	var g []keyed
	for _, c := range t.comps {
		if !c.hasMsg {
			continue
		}
		g = g[:0]
		for _, n := range c.members {
			if id := t.nodes[n].id; id != "" {
				g = append(g, keyed{strings.ToLower(id), id})
			}
		}
		slices.SortFunc(g, byKey)
		groups = append(groups, slices.Clone(g))
	}
	if len(groups) == 0 {
		return nil
	}
	slices.SortFunc(groups, func(a, b []keyed) int { return byKey(a[0], b[0]) })
	out := make([][]string, len(groups))
	for i, g := range groups {
		out[i] = make([]string, len(g))
		for j, k := range g {
			out[i][j] = k.id
		}
	}
	return out
}

// node returns the node for key, creating a parentless singleton.
func (t *Threader) node(key string) int32 {
	if n, ok := t.index[key]; ok {
		return n
	}
	n := int32(len(t.nodes))
	t.nodes = append(t.nodes, tnode{key: key, uf: n})
	t.index[key] = n
	c := &tcomp{members: []int32{n}, minRoot: key, minAll: key}
	c.tid = threadHash(key)
	t.comps[n] = c
	return n
}

func (t *Threader) find(n int32) int32 {
	for t.nodes[n].uf != n {
		t.nodes[n].uf = t.nodes[t.nodes[n].uf].uf // path halving
		n = t.nodes[n].uf
	}
	return n
}

func (t *Threader) union(a, b int32) {
	ra, rb := t.find(a), t.find(b)
	if ra == rb {
		return
	}
	ca, cb := t.comps[ra], t.comps[rb]
	if len(ca.members) < len(cb.members) {
		ra, rb, ca, cb = rb, ra, cb, ca
	}
	t.nodes[rb].uf = ra
	ca.members = append(ca.members, cb.members...)
	ca.minRoot = minNonEmpty(ca.minRoot, cb.minRoot)
	ca.minAll = min(ca.minAll, cb.minAll)
	ca.hasMsg = ca.hasMsg || cb.hasMsg
	delete(t.comps, rb)
	t.refresh(ra)
}

// setParent records that something links a parent to n; n stops being a
// root key of its component.
func (t *Threader) setParent(n int32) {
	if t.nodes[n].hasParent {
		return
	}
	t.nodes[n].hasParent = true
	r := t.find(n)
	c := t.comps[r]
	if c.minRoot == t.nodes[n].key {
		c.minRoot = ""
		for _, m := range c.members {
			if nd := &t.nodes[m]; !nd.hasParent {
				c.minRoot = minNonEmpty(c.minRoot, nd.key)
			}
		}
		t.refresh(r)
	}
}

func (t *Threader) refresh(r int32) {
	c := t.comps[r]
	k := c.minRoot
	if k == "" {
		k = c.minAll
	}
	c.tid = threadHash(k)
}

func threadHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "t" + hex.EncodeToString(sum[:8])
}

func minNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return min(a, b)
}
