package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestTriageThreadsOnDovecotE2E appends a corpus-like mailbox (the
// threadCorpus of TestTriageThreadPartitionIsDeterministic) to a mailbox
// of its own on the real Dovecot, runs triage --dry-run --json three
// times over it with concurrent workers, and requires the three
// partitions (by thread_id) to be identical, and to hold Dovecot's
// THREAD=REFS header links: recall (REFS' co-threaded pairs we co-thread)
// ≥ refsRecallMin and precision (our pairs Dovecot co-threads under REFS
// or REFERENCES) 1.000, leaving out, counted, the messages of the
// documented differences (a repeated Message-ID; an In-Reply-To with
// more than one id and no References, see mail.ParentIDs).
func TestTriageThreadsOnDovecotE2E(t *testing.T) {
	s := e2e.Require(t)
	raws := threadCorpus(t, 400)
	const mailbox = "threads-triage"
	s.ResetMailbox(t, e2e.Corpus, mailbox)
	// The documented differences, left out and counted: a message whose
	// Message-ID is repeated (Dovecot keeps the id of one copy only), and
	// one with no References whose In-Reply-To names more than one id
	// (Dovecot takes the first, often the author's address).
	parsed := map[uint32]*mail.Message{}
	idCount := map[string]int{}
	ac := s.IMAP(t, e2e.Corpus)
	for _, raw := range raws {
		cmd := ac.Append(mailbox, int64(len(raw)), nil)
		if _, err := cmd.Write(raw); err != nil {
			t.Fatalf("append: %v", err)
		}
		if err := cmd.Close(); err != nil {
			t.Fatalf("append: %v", err)
		}
		data, err := cmd.Wait()
		if err != nil || data.UID == 0 {
			t.Fatalf("append: got uid %v, err %v", data, err)
		}
		uid := uint32(data.UID)
		m := mail.Parse(raw)
		parsed[uid] = m
		idCount[mail.IDKey(m.MessageID)]++
	}
	aside := map[uint32]bool{}
	for uid, m := range parsed {
		if idCount[mail.IDKey(m.MessageID)] > 1 || len(m.References) == 0 && len(m.InReplyTo) > 1 {
			aside[uid] = true
		}
	}

	g := geminitest.NewServer(t, classifyReply)
	dir := t.TempDir()
	t.Setenv("MA_TEST_IMAP_PASS", s.Password(t, e2e.Corpus))
	t.Setenv("MA_TEST_GEMINI_KEY", apiKey)
	cfg := fmt.Sprintf(`state_dir = %q
[llm]
model = "gemini-test"
api_key_env = "MA_TEST_GEMINI_KEY"
base_url = %q
concurrency = 4
[[accounts]]
name = "corpus"
email = %q
mailbox = %q
authserv_id = %q
  [accounts.imap]
  host = %q
  port = %d
  security = "insecure"
  password_env = "MA_TEST_IMAP_PASS"
  [accounts.smtp]
  host = %q
  port = %d
  security = "insecure"
  password_env = "MA_TEST_IMAP_PASS"
`, filepath.Join(dir, "state"), g.URL, e2e.Corpus, mailbox, testAuthservID, s.IMAPHost, s.IMAPPort, s.SMTPHost, s.SMTPPort)
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	var runs []map[uint32]string
	for run := range 3 {
		var out, errb bytes.Buffer
		code := Main([]string{"--config", path, "triage", "--dry-run", "--json"}, strings.NewReader(""), &out, &errb)
		if code != ExitOK && code != ExitPartial {
			t.Fatalf("dry run %d: exit %d\nstderr: %s", run, code, errb.String())
		}
		got := uidPartition(t, out.String())
		if len(got) != len(raws) {
			t.Fatalf("dry run %d: got %d messages, want %d", run, len(got), len(raws))
		}
		runs = append(runs, got)
	}
	for i := 1; i < len(runs); i++ {
		if d := partitionDiff(runs[0], runs[i]); d != 0 {
			t.Errorf("dry runs 0 and %d: %d messages in differing threads, want 0", i, d)
		}
	}

	c := s.IMAP(t, e2e.Corpus)
	if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatalf("examine %s: %v", mailbox, err)
	}
	dovecot := func(alg imap.ThreadAlgorithm) map[[2]uint32]bool {
		data, err := c.UIDThread(&imapclient.ThreadOptions{Algorithm: alg, SearchCriteria: &imap.SearchCriteria{}}).Wait()
		if err != nil {
			t.Fatalf("UID THREAD %s: %v", alg, err)
		}
		byThread := map[string][]uint32{}
		var walk func(k string, td imapclient.ThreadData)
		walk = func(k string, td imapclient.ThreadData) {
			for _, n := range td.Chain {
				byThread[k] = append(byThread[k], uint32(n))
			}
			for _, sub := range td.SubThreads {
				walk(k, sub)
			}
		}
		for i, td := range data {
			walk(fmt.Sprint(i), td)
		}
		return pairsOf(canonical(byThread))
	}
	refs, references := dovecot(imap.ThreadAlgorithm("REFS")), dovecot(imap.ThreadReferences)

	ours := pairsOf(runs[0])
	rawRecall, rawPrecision, _ := pairScoresAside(refs, references, ours, nil)
	t.Logf("with nothing left out: recall %.4f, precision %.4f", rawRecall, rawPrecision)
	recall, precision, left := pairScoresAside(refs, references, ours, aside)
	t.Logf("%d messages; REFS pairs %d, ours %d; left out %d messages; recall %.4f (want ≥ 0.97), precision %.4f (want 1.000)",
		len(raws), len(refs), len(ours), left, recall, precision)
	if recall < 0.97 {
		t.Errorf("got recall %.4f of THREAD=REFS' co-threaded pairs, want ≥ 0.97", recall)
	}
	if precision < 1 {
		t.Errorf("got precision %.4f, want 1.000", precision)
	}
}

func pairsOf(p map[uint32]string) map[[2]uint32]bool {
	groups := map[string][]uint32{}
	for u, k := range p {
		groups[k] = append(groups[k], u)
	}
	out := map[[2]uint32]bool{}
	for _, g := range groups {
		slices.Sort(g)
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				out[[2]uint32{g[i], g[j]}] = true
			}
		}
	}
	return out
}

func pairScoresAside(refs, references, ours map[[2]uint32]bool, aside map[uint32]bool) (recall, precision float64, left int) {
	out := func(p [2]uint32) bool { return aside[p[0]] || aside[p[1]] }
	hit, n := 0, 0
	for p := range refs {
		if out(p) {
			continue
		}
		n++
		if ours[p] {
			hit++
		}
	}
	recall = 1
	if n > 0 {
		recall = float64(hit) / float64(n)
	}
	good, m := 0, 0
	for p := range ours {
		if out(p) {
			continue
		}
		m++
		if refs[p] || references[p] {
			good++
		}
	}
	precision = 1
	if m > 0 {
		precision = float64(good) / float64(m)
	}
	return recall, precision, len(aside)
}
