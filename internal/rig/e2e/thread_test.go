package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"golang.org/x/sync/errgroup"

	"github.com/mailagent/mailagent/internal/mail"
)

// threadAgreementMin is the share of messages whose whole thread must be
// composed identically by Dovecot and by mail.Threader. The accepted
// differences are explained in TestThreadingAgreesWithDovecot.
const threadAgreementMin = 0.99

// refsRecallMin is the share of Dovecot's THREAD=REFS co-threaded pairs
// (messages joined by References/In-Reply-To links) that mail.Threader
// must co-thread too.
const refsRecallMin = 0.97

// hamFolders are the SpamAssassin folders holding real mailing-list threads.
var hamFolders = []string{"easy-ham-1", "easy-ham-2", "hard-ham-1"}

type corpusMessage struct {
	path string
	raw  []byte // CRLF, mbox envelope stripped
}

func loadHam(t *testing.T) []corpusMessage {
	t.Helper()
	root := filepath.Join(CorpusDir(t), "spamassassin")
	var msgs []corpusMessage
	for _, folder := range hamFolders {
		dir := filepath.Join(root, folder)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Skipf("corpus folder %s not readable: %v", dir, err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("read %s: %v", p, err)
			}
			msgs = append(msgs, corpusMessage{path: filepath.Join(folder, e.Name()), raw: CRLF(StripMboxFrom(b))})
		}
	}
	return msgs
}

// appendAll appends msgs to mailbox over a few parallel connections and
// returns the UID of each message, by index.
func appendAll(t *testing.T, s *Stack, user, mailbox string, msgs []corpusMessage) []imap.UID {
	t.Helper()
	const workers = 4
	uids := make([]imap.UID, len(msgs))
	clients := make([]*imapclient.Client, workers)
	for i := range clients {
		c, err := s.dialIMAPWith(t, user, false) // see dialIMAPWith: TLS is slow for bulk APPEND
		if err != nil {
			t.Fatalf("imap login %s: %v", user, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	var g errgroup.Group
	for w, c := range clients {
		g.Go(func() error {
			for i := w; i < len(msgs); i += workers {
				uid, err := appendMessage(c, mailbox, msgs[i].raw, nil)
				if err != nil {
					return fmt.Errorf("append %s: %w", msgs[i].path, err)
				}
				uids[i] = uid
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return uids
}

// flatten returns every UID of one THREAD response tree.
func flatten(td imapclient.ThreadData, into []imap.UID) []imap.UID {
	for _, n := range td.Chain {
		into = append(into, imap.UID(n))
	}
	for _, sub := range td.SubThreads {
		into = append(into, flattenAll(sub)...)
	}
	return into
}

func flattenAll(td imapclient.ThreadData) []imap.UID { return flatten(td, nil) }

// partition maps each UID to a canonical key of its thread: the sorted UID
// list of the whole thread, so two partitions compare key by key.
type partition map[imap.UID]string

func partitionOf(threads [][]imap.UID) partition {
	p := make(partition)
	for _, th := range threads {
		th = slices.Clone(th)
		slices.Sort(th)
		key := fmt.Sprint(th)
		for _, uid := range th {
			p[uid] = key
		}
	}
	return p
}

// coThreadedPairs counts unordered pairs of messages that share a thread.
func coThreadedPairs(p partition) map[[2]imap.UID]bool {
	groups := make(map[string][]imap.UID)
	for uid, k := range p {
		groups[k] = append(groups[k], uid)
	}
	pairs := make(map[[2]imap.UID]bool)
	for _, g := range groups {
		slices.Sort(g)
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				pairs[[2]imap.UID{g[i], g[j]}] = true
			}
		}
	}
	return pairs
}

// TestThreadingAgreesWithDovecot appends the SpamAssassin ham (4,150 real
// messages with mailing-list threads) to a fresh mailbox, asks Dovecot for
// UID THREAD REFERENCES, and compares Dovecot's partition into threads with
// mail.Threader's.
//
// Known, accepted differences (mail.Threader's doc comment explains the
// choices on our side):
//   - RFC 5256 makes a reply whose ancestors are all missing a root and
//     merges dummy roots by the subject of their first child; Dovecot does
//     both, so its grouping depends on which messages are present. Our
//     threads only ever merge as messages arrive.
//   - Dovecot treats a repeated Message-ID as a message without one (RFC
//     5256 step 1A); we treat both copies as the same message.
//   - Dovecot's base subject (RFC 5256 section 2.1, with its own list-tag
//     handling) may differ from mail.SubjectKey in corner cases, which
//     decides which roots merge by subject.
//   - With no References, Dovecot takes the first id of In-Reply-To as the
//     parent; we take the last (mail.ParentIDs), since MH and exmh write
//     the replied-to author's address first: Dovecot joins unrelated
//     replies to one author through that address.
//   - Dovecot sorts by the Date header, falling back to INTERNALDATE; that
//     only orders threads and siblings and does not change membership,
//     which is all this test compares.
func TestThreadingAgreesWithDovecot(t *testing.T) {
	s := Require(t)
	msgs := loadHam(t)
	const mailbox = "threading-ham"

	start := time.Now()
	s.ResetMailbox(t, Corpus, mailbox)
	uids := appendAll(t, s, Corpus, mailbox, msgs)
	t.Logf("appended %d messages in %v", len(msgs), time.Since(start).Round(time.Millisecond))

	c := s.IMAP(t, Corpus)
	if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatalf("examine %s: %v", mailbox, err)
	}
	start = time.Now()
	data, err := c.UIDThread(&imapclient.ThreadOptions{
		Algorithm:      imap.ThreadReferences,
		SearchCriteria: &imap.SearchCriteria{},
	}).Wait()
	if err != nil {
		t.Fatalf("UID THREAD REFERENCES: %v", err)
	}
	t.Logf("dovecot threaded in %v", time.Since(start).Round(time.Millisecond))
	var dovecotThreads [][]imap.UID
	for _, td := range data {
		dovecotThreads = append(dovecotThreads, flattenAll(td))
	}
	dovecot := partitionOf(dovecotThreads)
	if got, want := len(dovecot), len(msgs); got != want {
		t.Fatalf("got %d messages in Dovecot's threads, want %d", got, want)
	}

	// Our side: parse what we appended, thread it, group UIDs by thread id.
	start = time.Now()
	th := mail.NewThreader()
	parsed := make([]*mail.Message, len(msgs))
	for i, m := range msgs {
		parsed[i] = mail.Parse(m.raw)
		th.Add(mail.InputOf(parsed[i]))
	}
	byThread := make(map[string][]imap.UID)
	for i, m := range parsed {
		id := th.ThreadID(m.MessageID)
		if id == "" {
			t.Fatalf("ThreadID(%q) of %s: got \"\", want the id of a thread", m.MessageID, msgs[i].path)
		}
		byThread[id] = append(byThread[id], uids[i])
	}
	t.Logf("mail.Threader parsed and threaded in %v", time.Since(start).Round(time.Millisecond))
	var ourThreads [][]imap.UID
	for _, g := range byThread {
		ourThreads = append(ourThreads, g)
	}
	ours := partitionOf(ourThreads)

	// Raw agreement: messages whose whole thread is composed identically,
	// and co-threaded pairs (|both| / |either|).
	same := 0
	for uid, k := range dovecot {
		if ours[uid] == k {
			same++
		}
	}
	dp, op := coThreadedPairs(dovecot), coThreadedPairs(ours)
	both := 0
	for p := range dp {
		if op[p] {
			both++
		}
	}
	pairShare := 1.0
	if either := len(dp) + len(op) - both; either > 0 {
		pairShare = float64(both) / float64(either)
	}
	dKeys, oKeys := keySet(dovecot), keySet(ours)
	sameThreads := 0
	for k := range dKeys {
		if oKeys[k] {
			sameThreads++
		}
	}
	t.Logf("threads: Dovecot %d, ours %d, identical %d", len(dKeys), len(oKeys), sameThreads)
	t.Logf("messages in identically composed threads: %d/%d (%.2f%%)", same, len(msgs), 100*float64(same)/float64(len(msgs)))
	t.Logf("co-threaded pairs: Dovecot %d, ours %d, both %d (agreement %.2f%%)", len(dp), len(op), both, 100*pairShare)

	// Explained agreement: a Dovecot thread that we split into pieces
	// linked by equal base subjects is Dovecot's subject merge of dummy
	// roots and orphaned replies, which mail.Threader leaves out on
	// purpose. Anything else (a split not linked by subject, or one of our
	// threads spanning several of Dovecot's) is a real disagreement.
	subjectKey := make(map[imap.UID]string, len(uids))
	for i, uid := range uids {
		subjectKey[uid] = mail.SubjectKey(parsed[i].Subject)
	}
	v := classify(dovecot, ours, subjectKey)
	t.Logf("Dovecot threads: %d identical, %d split by us into subject-linked pieces (%d messages, accepted), %d split otherwise, %d crossed by our threads",
		v.identical, v.subjectSplit, v.subjectSplitMsgs, len(v.otherSplit), len(v.crossed))
	linked, linkedMsgs := referenceLinked(v.crossed, dovecot, ours, uids, parsed)
	t.Logf("Dovecot threads crossed by ours through a header link Dovecot dropped (RFC 5256: a parent is never changed once set): %d (%d messages, accepted)", len(linked), linkedMsgs)
	agreed := same + v.subjectSplitMsgs + linkedMsgs
	share := float64(agreed) / float64(len(msgs))
	t.Logf("messages in identical or accepted threads: %d/%d (%.2f%%)", agreed, len(msgs), 100*share)
	v.crossed = slices.DeleteFunc(v.crossed, func(k string) bool { return slices.Contains(linked, k) })

	// Header links, with nothing left out. Dovecot's THREAD=REFS groups
	// by References and In-Reply-To only (no subject merging), so its
	// co-threaded pairs are the pairs header links join. Recall is the
	// share of REFS' pairs that we co-thread too.
	//
	// Precision cannot be measured against Dovecot's threads alone: RFC
	// 5256 step 1, run in mailbox order, keeps the first parent a message
	// id gets and drops every later, conflicting link, so which links
	// Dovecot drops depends on the order of APPEND (appendAll is
	// concurrent: runs left out 216 and 261 messages, and measured a raw
	// precision of 0.9775 and 0.9722), while mail.Threader keeps every
	// link so that threads never depend on arrival order. So the test
	// computes RFC 5256 on the same input in the same UID order
	// (ModelRefs, rfc5256.go), and requires two things:
	//   - the model composes Dovecot's REFS threads exactly (0 messages
	//     differ; 4,150 messages), so its list of dropped links, each with
	//     the rule that dropped it, is exactly what Dovecot dropped;
	//   - every pair of ours is co-threaded by Dovecot (REFS or
	//     REFERENCES: we also merge parentless roots by subject, as
	//     REFERENCES does), or joined through those dropped links and the
	//     links we read differently on purpose (In-Reply-To's last id,
	//     mail.ParentIDs: MH and exmh write the replied-to author's
	//     address first, which Dovecot takes as the parent; a repeated
	//     Message-ID, whose later copy RFC 5256 treats as having none; and
	//     the subject merge of messages that name no parent themselves,
	//     which THREAD=REFERENCES skips once another message's References
	//     gave one of them a parent first: found in a fourth run, where
	//     APPEND's order made 104 such pairs).
	// That is precision 1.000 with nothing excluded: measured in three
	// runs, 219 of our 9,749 pairs are not co-threaded by Dovecot, and all
	// 219 are joined by 44 or 45 dropped links (42 In-Reply-To's last id;
	// 2 or 3 replaced by the message's own References, 0 or 1 where the
	// first parent won, by APPEND order); they are logged on every run. Two controls show the check can fail: keeping
	// every dropped link, the model no longer composes REFS' threads, and
	// one planted pair across unrelated threads is reported unexplained.
	refsData, err := c.UIDThread(&imapclient.ThreadOptions{
		Algorithm:      imap.ThreadAlgorithm("REFS"),
		SearchCriteria: &imap.SearchCriteria{},
	}).Wait()
	if err != nil {
		t.Fatalf("UID THREAD REFS: %v", err)
	}
	var refsThreads [][]imap.UID
	for _, td := range refsData {
		refsThreads = append(refsThreads, flattenAll(td))
	}
	refs := partitionOf(refsThreads)
	if got, want := len(refs), len(msgs); got != want {
		t.Fatalf("got %d messages in Dovecot's REFS threads, want %d", got, want)
	}
	rp := coThreadedPairs(refs)
	recall, rawPrecision := pairScores(rp, op, dp)
	rc := checkRFC5256(uids, parsed, refs, dovecot, op)
	precision := 1 - float64(len(rc.Unexplained))/float64(max(1, len(op)))
	t.Logf("THREAD=REFS co-threaded pairs %d, ours %d; recall %.4f (want ≥ %.2f); against Dovecot's kept links alone precision %.4f",
		len(rp), len(op), recall, refsRecallMin, rawPrecision)
	t.Logf("RFC 5256 on the same input: composes %d of %d messages differently from REFS (want 0; keeping every dropped link: %d, the control); our pairs Dovecot does not co-thread: %d, joined by dropped links %v, unexplained %d: precision %.4f (want 1.000)",
		rc.ModelDiff, len(msgs), rc.AllLinksDiff, rc.ExtraPairs, rc.Dropped, len(rc.Unexplained), precision)
	if rc.ModelDiff != 0 {
		t.Errorf("the RFC 5256 model composes %d messages' REFS threads differently from Dovecot, want 0: the comparison is not exact", rc.ModelDiff)
	}
	if rc.AllLinksDiff == 0 {
		t.Errorf("control: keeping every dropped link, the model still composes REFS exactly: the dropped links change nothing, the check proves nothing")
	}
	if !rc.PlantedCaught {
		t.Errorf("control: a pair planted across unrelated threads was not reported unexplained")
	}
	if recall < refsRecallMin {
		t.Errorf("got recall %.4f of THREAD=REFS' co-threaded pairs (nothing left out), want ≥ %.2f", recall, refsRecallMin)
		logMissedLinks(t, rp, op, uids, parsed, msgs, 10)
	}
	if len(rc.Unexplained) > 0 {
		t.Errorf("got precision %.4f: %d of our co-threaded pairs are neither co-threaded by Dovecot nor joined by a link RFC 5256 drops, want 0", precision, len(rc.Unexplained))
		bad := map[[2]imap.UID]bool{}
		for _, p := range rc.Unexplained {
			bad[[2]imap.UID{imap.UID(p[0]), imap.UID(p[1])}] = true
		}
		logExtraPairs(t, bad, nil, nil, uids, parsed, msgs, 10)
	}

	if share < threadAgreementMin {
		t.Errorf("got %.2f%% of messages in identical or accepted threads, want ≥ %.0f%%", 100*share, 100*threadAgreementMin)
	}
	bad := append(v.crossed, v.otherSplit...)
	if len(bad) > 0 {
		logDisagreements(t, bad, dovecot, ours, uids, parsed, msgs, 10)
	}
}

// referenceLinked picks, among the Dovecot threads that one of our threads
// reaches out of, those where the reach is explained by a real header link:
// a message on one side names, in its References or In-Reply-To, a message
// on the other side. RFC 5256 (and Dovecot) keep the first parent a message
// gets and drop later conflicting links, which makes the result depend on
// the order of the mailbox; mail.Threader keeps every link so that thread
// ids do not depend on arrival order. Such a crossing is that documented
// choice, not a threading error.
func referenceLinked(crossed []string, dovecot, ours partition, uids []imap.UID, parsed []*mail.Message) (linked []string, msgs int) {
	byID := make(map[string]imap.UID, len(uids))
	refs := make(map[imap.UID][]string, len(uids))
	for i, uid := range uids {
		byID[mail.IDKey(parsed[i].MessageID)] = uid
		for _, r := range append(slices.Clone(parsed[i].References), parsed[i].InReplyTo...) {
			refs[uid] = append(refs[uid], mail.IDKey(r))
		}
	}
	members := func(p partition, key string) []imap.UID {
		var out []imap.UID
		for uid, k := range p {
			if k == key {
				out = append(out, uid)
			}
		}
		return out
	}
	for _, dk := range crossed {
		d := members(dovecot, dk)
		explained := true
		seen := map[string]bool{}
		for _, uid := range d {
			ok := ours[uid]
			if seen[ok] {
				continue
			}
			seen[ok] = true
			inD := map[imap.UID]bool{}
			for _, u := range d {
				inD[u] = true
			}
			link := false
			for _, u := range members(ours, ok) {
				for _, r := range refs[u] {
					if target, found := byID[r]; found && ours[target] == ok && inD[u] != inD[target] {
						link = true
					}
				}
			}
			if !link && len(members(ours, ok)) != countIn(members(ours, ok), inD) {
				explained = false
			}
		}
		if explained {
			linked = append(linked, dk)
			msgs += len(d)
		}
	}
	return linked, msgs
}

func countIn(uids []imap.UID, set map[imap.UID]bool) int {
	n := 0
	for _, u := range uids {
		if set[u] {
			n++
		}
	}
	return n
}

// verdict sorts Dovecot's threads by how ours relate to them.
type verdict struct {
	identical        int
	subjectSplit     int      // split by us into pieces linked by subject
	subjectSplitMsgs int      // messages in those threads
	otherSplit       []string // Dovecot thread keys split by us otherwise
	crossed          []string // Dovecot thread keys one of ours reaches out of
}

func classify(dovecot, ours partition, subjectKey map[imap.UID]string) verdict {
	members := func(p partition) map[string][]imap.UID {
		m := make(map[string][]imap.UID)
		for uid, k := range p {
			m[k] = append(m[k], uid)
		}
		return m
	}
	dThreads, oThreads := members(dovecot), members(ours)
	var v verdict
	for dk, dUIDs := range dThreads {
		pieces := make(map[string]bool)
		crossed := false
		for _, uid := range dUIDs {
			ok := ours[uid]
			pieces[ok] = true
			for _, o := range oThreads[ok] {
				if dovecot[o] != dk {
					crossed = true
				}
			}
		}
		switch {
		case crossed:
			v.crossed = append(v.crossed, dk)
		case len(pieces) == 1:
			v.identical++
		case subjectLinked(pieces, oThreads, subjectKey):
			v.subjectSplit++
			v.subjectSplitMsgs += len(dUIDs)
		default:
			v.otherSplit = append(v.otherSplit, dk)
		}
	}
	sort.Strings(v.crossed)
	sort.Strings(v.otherSplit)
	return v
}

// subjectLinked reports whether the pieces (our thread keys) form one group
// when pieces sharing any non-empty base subject are joined.
func subjectLinked(pieces map[string]bool, oThreads map[string][]imap.UID, subjectKey map[imap.UID]string) bool {
	parent := make(map[string]string)
	var find func(string) string
	find = func(x string) string {
		if parent[x] == x {
			return x
		}
		parent[x] = find(parent[x])
		return parent[x]
	}
	owner := make(map[string]string) // subject key → first piece seen with it
	for p := range pieces {
		parent[p] = p
	}
	for p := range pieces {
		for _, uid := range oThreads[p] {
			sk := subjectKey[uid]
			if sk == "" {
				continue
			}
			if o, ok := owner[sk]; ok {
				parent[find(p)] = find(o)
			} else {
				owner[sk] = p
			}
		}
	}
	roots := make(map[string]bool)
	for p := range pieces {
		roots[find(p)] = true
	}
	return len(roots) == 1
}

func keySet(p partition) map[string]bool {
	ks := make(map[string]bool)
	for _, k := range p {
		ks[k] = true
	}
	return ks
}

// logDisagreements prints up to limit of the given Dovecot threads beside
// ours, with each message's subject and ids so the cause can be read off.
func logDisagreements(t *testing.T, keys []string, dovecot, ours partition, uids []imap.UID, parsed []*mail.Message, msgs []corpusMessage, limit int) {
	t.Helper()
	index := make(map[imap.UID]int, len(uids))
	for i, uid := range uids {
		index[uid] = i
	}
	t.Logf("%d of Dovecot's threads disagree with ours beyond subject merging; the first %d:", len(keys), min(limit, len(keys)))
	for n, k := range keys {
		if n == limit {
			break
		}
		var b strings.Builder
		fmt.Fprintf(&b, "disagreement %d: Dovecot thread %s\n", n+1, k)
		var members []imap.UID
		for uid, dk := range dovecot {
			if dk == k {
				members = append(members, uid)
			}
		}
		slices.Sort(members)
		for _, uid := range members {
			m := parsed[index[uid]]
			fmt.Fprintf(&b, "  uid %d %s subject=%q id=%q irt=%v refs(last 3)=%v\n    our thread: %s\n",
				uid, msgs[index[uid]].path, m.Subject, m.MessageID, m.InReplyTo, lastN(m.References, 3), ours[uid])
		}
		t.Log(b.String())
	}
}

func lastN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// pairScores returns recall, the share of ref's pairs found in ours, and
// precision, the share of ours found in ref or alt. An empty side scores 1.
func pairScores(ref, ours, alt map[[2]imap.UID]bool) (recall, precision float64) {
	hit := 0
	for p := range ref {
		if ours[p] {
			hit++
		}
	}
	recall = 1
	if len(ref) > 0 {
		recall = float64(hit) / float64(len(ref))
	}
	good := 0
	for p := range ours {
		if ref[p] || alt[p] {
			good++
		}
	}
	precision = 1
	if len(ours) > 0 {
		precision = float64(good) / float64(len(ours))
	}
	return recall, precision
}

// logMissedLinks prints up to limit pairs Dovecot co-threads under REFS
// and we do not, with each message's ids.
func logMissedLinks(t *testing.T, ref, ours map[[2]imap.UID]bool, uids []imap.UID, parsed []*mail.Message, msgs []corpusMessage, limit int) {
	t.Helper()
	logPairs(t, "co-threaded by THREAD=REFS, not by us", ref, func(p [2]imap.UID) bool { return !ours[p] }, uids, parsed, msgs, limit)
}

// logExtraPairs prints up to limit of our co-threaded pairs Dovecot
// co-threads under neither algorithm.
func logExtraPairs(t *testing.T, ours, ref, alt map[[2]imap.UID]bool, uids []imap.UID, parsed []*mail.Message, msgs []corpusMessage, limit int) {
	t.Helper()
	logPairs(t, "co-threaded by us, by neither REFS nor REFERENCES", ours, func(p [2]imap.UID) bool { return !ref[p] && !alt[p] }, uids, parsed, msgs, limit)
}

func logPairs(t *testing.T, what string, pairs map[[2]imap.UID]bool, pick func([2]imap.UID) bool, uids []imap.UID, parsed []*mail.Message, msgs []corpusMessage, limit int) {
	t.Helper()
	index := make(map[imap.UID]int, len(uids))
	for i, uid := range uids {
		index[uid] = i
	}
	var sel [][2]imap.UID
	for p := range pairs {
		if pick(p) {
			sel = append(sel, p)
		}
	}
	slices.SortFunc(sel, func(a, b [2]imap.UID) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	})
	t.Logf("%d pairs %s; the first %d:", len(sel), what, min(limit, len(sel)))
	for n, p := range sel {
		if n == limit {
			break
		}
		var b strings.Builder
		for _, uid := range p {
			m := parsed[index[uid]]
			fmt.Fprintf(&b, "  uid %d %s subject=%q id=%q irt=%v refs(last 3)=%v\n",
				uid, msgs[index[uid]].path, m.Subject, m.MessageID, m.InReplyTo, lastN(m.References, 3))
		}
		t.Log(b.String())
	}
}

// checkRFC5256 runs CheckRefs on the test's messages and partitions.
func checkRFC5256(uids []imap.UID, parsed []*mail.Message, refs, references partition, ours map[[2]imap.UID]bool) RefsCheck {
	in := make([]RefsInput, len(uids))
	for i, uid := range uids {
		in[i] = RefsInput{UID: uint32(uid), M: parsed[i]}
	}
	slices.SortFunc(in, func(a, b RefsInput) int { return int(a.UID) - int(b.UID) })
	conv := func(p partition) map[uint32]string {
		out := make(map[uint32]string, len(p))
		for uid, k := range p {
			out[uint32(uid)] = k
		}
		return out
	}
	pairs := make(map[[2]uint32]bool, len(ours))
	for p := range ours {
		pairs[[2]uint32{uint32(p[0]), uint32(p[1])}] = true
	}
	return CheckRefs(in, conv(refs), conv(references), pairs)
}
