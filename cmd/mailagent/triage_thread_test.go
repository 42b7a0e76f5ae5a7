package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/internal/rig/testsize"
	"github.com/mailagent/mailagent/store"
)

// threadCorpus is a corpus-like mailbox: a contiguous run of SpamAssassin
// ham (list threads, replies before and after their parents, missing
// parents), every mime-edge message with a header, and scenario mail
// (a reply chain whose root arrives last, subject-only joins).
func threadCorpus(t *testing.T, hamCount int) [][]byte {
	t.Helper()
	root := e2e.CorpusDir(t) // skips when absent
	var raws [][]byte
	ham := filepath.Join(root, "spamassassin", "easy-ham-1")
	entries, err := os.ReadDir(ham)
	if err != nil {
		t.Skipf("corpus folder %s not readable: %v", ham, err)
	}
	for _, e := range entries[:min(hamCount, len(entries))] {
		b, err := os.ReadFile(filepath.Join(ham, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, e2e.CRLF(e2e.StripMboxFrom(b)))
	}
	_ = filepath.WalkDir(filepath.Join(root, "mime-edge"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".raw") && !strings.HasSuffix(p, ".eml") {
			return err
		}
		if b, rerr := os.ReadFile(p); rerr == nil && len(b) > 0 {
			raws = append(raws, e2e.CRLF(e2e.StripMboxFrom(b)))
		}
		return nil
	})
	scenario := func(id, subject, refs string) []byte {
		h := "From: Bob <bob@example.org>\nTo: Ada <ada@example.com>\nSubject: " + subject +
			"\nDate: Mon, 02 Nov 2026 10:00:00 +0000\nMessage-ID: <" + id + ">\n"
		if refs != "" {
			h += "References: " + refs + "\nIn-Reply-To: " + refs[strings.LastIndexByte(refs, ' ')+1:] + "\n"
		}
		return e2e.CRLF([]byte(h + "\nbody\n"))
	}
	raws = append(raws,
		scenario("s3@scenario.test", "Re: Re: plan", "<s0@scenario.test> <s1@scenario.test> <s2@scenario.test>"),
		scenario("s2@scenario.test", "Re: plan", "<s1@scenario.test>"),
		scenario("s1@scenario.test", "plan", ""),
		scenario("s4@scenario.test", "Fwd: plan", ""),
		scenario("s5@scenario.test", "lunch", ""),
		scenario("s6@scenario.test", "Re: lunch", ""),
		scenario("b1@scenario.test", "budget", ""),
		scenario("b2@scenario.test", "Re: budget", "<b0@scenario.test> <b1@scenario.test>"),
		scenario("c2@scenario.test", "Re: costs", "<c1@scenario.test>"))
	// No Message-ID (the parse synthesizes one from the body): a reply
	// whose References bridge the budget and costs threads.
	raws = append(raws, e2e.CRLF([]byte("From: Bob <bob@example.org>\nTo: Ada <ada@example.com>\nSubject: Re: budget and costs\n"+
		"Date: Mon, 02 Nov 2026 11:00:00 +0000\nReferences: <b1@scenario.test> <c1@scenario.test>\n\nboth\n")))
	return raws
}

// uidPartition reads triage --json lines into a canonical partition:
// each UID mapped to the sorted UIDs of its thread.
func uidPartition(t *testing.T, out string) map[uint32]string {
	t.Helper()
	byThread := map[string][]uint32{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var j TriageJSON
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatalf("stdout line is not JSON: %.200q: %v", sc.Text(), err)
		}
		if j.ThreadID == "" {
			t.Fatalf("uid %d: empty thread_id", j.UID)
		}
		byThread[j.ThreadID] = append(byThread[j.ThreadID], j.UID)
	}
	return canonical(byThread)
}

// referenceThreads threads h's INBOX with one mail.Threader, fed in one
// order from the same imapsync fetch triage uses: the partition every run
// must reproduce, as thread id → UIDs.
func referenceThreads(ctx context.Context, t *testing.T, h *harness) map[string][]uint32 {
	t.Helper()
	_, cfg := h.factory(t)
	c, err := DialIMAP(ctx, &cfg.Accounts[0])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Select(ctx, "INBOX", true); err != nil {
		t.Fatal(err)
	}
	uids, err := c.Search(ctx, imapsync.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	fetched := map[uint32]mail.ThreadInput{}
	th := mail.NewThreader()
	if err := c.Fetch(ctx, uids, imapsync.FetchOptions{MaxMessageBytes: cfg.Sync.MaxMessageBytes}, func(m imapsync.RawMessage) error {
		in := mail.InputOf(mail.Parse(m.Raw))
		fetched[m.UID] = in
		th.Add(in)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]uint32{}
	for uid, in := range fetched {
		id := th.ThreadOf(in)
		want[id] = append(want[id], uid)
	}
	return want
}

func canonical(byThread map[string][]uint32) map[uint32]string {
	p := map[uint32]string{}
	for _, uids := range byThread {
		slices.Sort(uids)
		k := fmt.Sprint(uids)
		for _, u := range uids {
			p[u] = k
		}
	}
	return p
}

// partitionDiff counts the UIDs whose thread (as a set of UIDs) differs.
func partitionDiff(a, b map[uint32]string) int {
	n := 0
	for u, k := range a {
		if b[u] != k {
			n++
		}
	}
	for u := range b {
		if _, ok := a[u]; !ok {
			n++
		}
	}
	return n
}

// TestTriageThreadPartitionIsDeterministic runs triage --dry-run --json
// three times, then a real triage, over a corpus-like mailbox delivered
// in a shuffled order, with concurrent workers (llm.concurrency 3), and
// requires every run's partition into threads (by thread_id) to be the
// same, and the same as mail.Threader's over the same set of messages
// (order-independent), and the store's after the real run.
//
// The ham messages are generated volume (testsize: a tenth under -race, at
// least enough for the 20 multi-message threads the test requires); the
// three dry runs and the real one are the behaviour under test.
func TestTriageThreadPartitionIsDeterministic(t *testing.T) {
	t.Parallel()
	raws := threadCorpus(t, testsize.N(400, 40))
	h := newHarness(t, classifyReply, "")
	rng := rand.New(rand.NewPCG(26, 1))
	rng.Shuffle(len(raws), func(i, j int) { raws[i], raws[j] = raws[j], raws[i] })
	ctx := context.Background()
	for i, raw := range raws {
		if _, err := h.imap.Append(ctx, ownerAddr, "INBOX", raw, nil, time.Now()); err != nil {
			t.Fatalf("append message %d: %v", i, err)
		}
	}
	// The reference: mail.Threader over the messages as triage fetches
	// them (the same imapsync fetch), added in one order.
	f, _ := h.factory(t)
	want := referenceThreads(ctx, t, h)
	ref := canonical(want)
	multi := 0
	for _, g := range want {
		if len(g) > 1 {
			multi++
		}
	}
	if multi < 20 {
		t.Fatalf("got %d multi-message threads in %d messages, want at least 20 (the test needs threads)", multi, len(raws))
	}
	t.Logf("%d messages, %d threads, %d with more than one message", len(raws), len(want), multi)

	var runs []map[uint32]string
	for run := range 3 {
		stdout, stderr, code := h.run("triage", "--dry-run", "--json")
		if code != ExitOK && code != ExitPartial {
			t.Fatalf("dry run %d: exit %d\nstderr: %s", run, code, stderr)
		}
		got := uidPartition(t, stdout)
		if len(got) != len(raws) {
			t.Fatalf("dry run %d: got %d messages, want %d", run, len(got), len(raws))
		}
		runs = append(runs, got)
		if d := partitionDiff(got, ref); d != 0 {
			t.Errorf("dry run %d: %d messages in a thread that differs from mail.Threader's over the set, want 0", run, d)
			n := 0
			for u, k := range got {
				if ref[u] != k && n < 5 {
					n++
					t.Logf("uid %d: got thread %s, want %s", u, k, ref[u])
				}
			}
		}
	}
	for i := 1; i < len(runs); i++ {
		if d := partitionDiff(runs[0], runs[i]); d != 0 {
			t.Errorf("dry runs 0 and %d: %d messages in differing threads, want 0", i, d)
		}
	}

	stdout, stderr, code := h.run("triage", "--json")
	if code != ExitOK && code != ExitPartial {
		t.Fatalf("triage: exit %d\nstderr: %s", code, stderr)
	}
	if d := partitionDiff(uidPartition(t, stdout), ref); d != 0 {
		t.Errorf("triage --json: %d messages in a thread that differs from mail.Threader's, want 0", d)
	}
	st, err := f.openStore(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	stored := map[string][]uint32{}
	if err := st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		stored[r.ThreadID] = append(stored[r.ThreadID], r.UID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := partitionDiff(canonical(stored), ref); d != 0 {
		t.Errorf("store after triage: %d messages in a thread that differs from mail.Threader's, want 0", d)
	}
}

// hostileThreadMail builds one message of the hostile mailbox: id may be
// "" (no Message-ID), refs and irt are raw header values ("" for none).
func hostileThreadMail(id, subject, refs, irt string) []byte {
	h := "From: Mallory <mallory@example.org>\nTo: Ada <ada@example.com>\nSubject: " + subject +
		"\nDate: Mon, 02 Nov 2026 10:00:00 +0000\n"
	if id != "" {
		h += "Message-ID: <" + id + ">\n"
	}
	if refs != "" {
		h += "References: " + refs + "\n"
	}
	if irt != "" {
		h += "In-Reply-To: " + irt + "\n"
	}
	return e2e.CRLF([]byte(h + "\nbody of " + subject + "\n"))
}

// TestTriageThreadPartitionHostileHeaders: headers written to make
// threading depend on the order of processing (a late message bridging
// two threads, a borrowed Message-ID, reference loops and self
// references, an In-Reply-To naming an address first, a bridge without a
// Message-ID, a References list of 2,000 ids, hostile subjects) must not:
// for each attack, every dry run's partition of its messages equals
// mail.Threader's over the set. The positive control runs the same
// mailbox with prethreading off and sees the late bridges land.
func TestTriageThreadPartitionHostileHeaders(t *testing.T) {
	t.Parallel()
	var long strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&long, "<l%d@long.test> ", i)
	}
	type attack struct {
		name string
		msgs [][]byte
	}
	chain := func(tag string, n int) [][]byte { // a thread of n, each replying to the one before
		var out [][]byte
		for i := range n {
			refs := ""
			if i > 0 {
				refs = fmt.Sprintf("<%s%d@%s.test>", tag, i-1, tag)
			}
			out = append(out, hostileThreadMail(fmt.Sprintf("%s%d@%s.test", tag, i, tag), "thread "+tag, refs, ""))
		}
		return out
	}
	attacks := []attack{
		{"late bridge of two threads", append(append(chain("a", 8), chain("b", 8)...),
			hostileThreadMail("bridge@x.test", "Re: both", "<zz@x.test> <a0@a.test> <b0@b.test>", ""))},
		{"late new root above a thread", append(chain("c", 8),
			hostileThreadMail("late@x.test", "Re: thread c", "<older@x.test> <c0@c.test>", ""))},
		{"borrowed Message-ID", append(append(chain("d", 6), chain("e", 6)...),
			hostileThreadMail("d0@d.test", "thread d", "<e0@e.test>", ""))},
		{"reference loop and self reference", [][]byte{
			hostileThreadMail("f1@f.test", "loop", "<f2@f.test>", ""),
			hostileThreadMail("f2@f.test", "loop", "<f1@f.test>", ""),
			hostileThreadMail("f3@f.test", "self", "<f3@f.test>", "<f3@f.test>")}},
		{"In-Reply-To naming an address first", append(chain("g", 4),
			hostileThreadMail("g9@g.test", "Re: x", "", `Message from Bob <bob@example.org> of "Mon." <g0@g.test>`),
			hostileThreadMail("h9@h.test", "Re: y", "", `Message from Bob <bob@example.org> of "Tue." <h0@h.test>`))},
		{"bridge without a Message-ID", append(append(chain("i", 6), chain("j", 6)...),
			hostileThreadMail("", "Re: i and j", "<i0@i.test> <j0@j.test>", ""))},
		{"2,000 References", append(chain("k", 6),
			hostileThreadMail("k-long@k.test", "Re: long", long.String()+"<k0@k.test>", ""))},
		{"hostile subjects", [][]byte{
			hostileThreadMail("m1@m.test", "plan \x1b[2J", "", ""),
			hostileThreadMail("m2@m.test", "Re: Fwd: [list] AW: plan \x1b[2J", "", ""),
			hostileThreadMail("m3@m.test", "Re: \u202eplan", "", "")}},
	}
	h := newHarness(t, classifyReply, "")
	ctx := context.Background()
	attackOf := map[uint32]int{}
	var uid uint32
	for a, at := range attacks {
		for _, raw := range at.msgs {
			u, err := h.imap.Append(ctx, ownerAddr, "INBOX", raw, nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			uid = uint32(u)
			attackOf[uid] = a
		}
	}
	// The reference: mail.Threader over the set as triage fetches it.
	want := referenceThreads(ctx, t, h)
	ref := canonical(want)

	// through counts the attacks whose messages are threaded differently
	// from ref in any of runs dry runs.
	through := func(runs int) (int, []string) {
		t.Helper()
		bad := map[int]bool{}
		for range runs {
			stdout, stderr, code := h.run("triage", "--dry-run", "--json")
			if code != ExitOK && code != ExitPartial {
				t.Fatalf("dry run: exit %d\nstderr: %s", code, stderr)
			}
			got := uidPartition(t, stdout)
			if len(got) != len(ref) {
				t.Fatalf("dry run: got %d messages, want %d", len(got), len(ref))
			}
			for u, k := range got {
				if ref[u] != k {
					bad[attackOf[u]] = true
				}
			}
		}
		var names []string
		for a := range bad {
			names = append(names, attacks[a].name)
		}
		slices.Sort(names)
		return len(bad), names
	}
	n, names := through(3)
	t.Logf("attacks tried %d, through %d %v", len(attacks), n, names)
	if n != 0 {
		t.Errorf("got %d attacks through (%v), want 0", n, names)
	}

	// Positive control: without prethreading, a message that joins
	// threads printed before it leaves them under their old ids.
	h.tweak = func(f *cmdutil.Factory) { f.PrethreadOff = true }
	defer func() { h.tweak = nil }()
	n, names = through(1)
	t.Logf("positive control (prethread off): through %d %v", n, names)
	if !slices.Contains(names, "late bridge of two threads") {
		t.Errorf("positive control: got %v through, want the late bridge to land with prethreading off", names)
	}
}
