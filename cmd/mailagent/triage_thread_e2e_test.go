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
// THREAD=REFS header links with nothing left out: recall (REFS'
// co-threaded pairs we co-thread) ≥ 0.97, and precision 1.000 against
// RFC 5256 computed on the same input (e2e.CheckRefs): the model must
// compose Dovecot's REFS threads exactly, and every pair of ours must be
// co-threaded by Dovecot (REFS or REFERENCES) or joined by a header link
// RFC 5256 drops in mailbox order (the first parent an id gets wins; a
// repeated Message-ID's later copy has none) or that mail.ParentIDs reads
// otherwise on purpose (In-Reply-To's last id). See
// TestThreadingAgreesWithDovecot in internal/rig/e2e for why Dovecot's
// threads alone cannot be the reference.
func TestTriageThreadsOnDovecotE2E(t *testing.T) {
	s := e2e.Require(t)
	raws := threadCorpus(t, 400)
	const mailbox = "threads-triage"
	s.ResetMailbox(t, e2e.Corpus, mailbox)
	parsed := map[uint32]*mail.Message{}
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
		parsed[uint32(data.UID)] = mail.Parse(raw)
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
	dovecot := func(alg imap.ThreadAlgorithm) map[uint32]string {
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
		return canonical(byThread)
	}
	refsPart, referencesPart := dovecot(imap.ThreadAlgorithm("REFS")), dovecot(imap.ThreadReferences)
	refs := pairsOf(refsPart)

	ours := pairsOf(runs[0])
	var in []e2e.RefsInput
	for uid, m := range parsed {
		in = append(in, e2e.RefsInput{UID: uid, M: m})
	}
	slices.SortFunc(in, func(a, b e2e.RefsInput) int { return int(a.UID) - int(b.UID) })
	rc := e2e.CheckRefs(in, refsPart, referencesPart, ours)
	hit := 0
	for p := range refs {
		if ours[p] {
			hit++
		}
	}
	recall := float64(hit) / float64(max(1, len(refs)))
	precision := 1 - float64(len(rc.Unexplained))/float64(max(1, len(ours)))
	t.Logf("%d messages; REFS pairs %d, ours %d, nothing left out; recall %.4f (want ≥ 0.97)", len(raws), len(refs), len(ours), recall)
	t.Logf("RFC 5256 on the same input: composes %d messages differently from REFS (want 0; keeping every dropped link: %d); our pairs Dovecot does not co-thread: %d, joined by dropped links %v, unexplained %d: precision %.4f (want 1.000)",
		rc.ModelDiff, rc.AllLinksDiff, rc.ExtraPairs, rc.Dropped, len(rc.Unexplained), precision)
	if rc.ModelDiff != 0 {
		t.Errorf("the RFC 5256 model composes %d messages' REFS threads differently from Dovecot, want 0", rc.ModelDiff)
	}
	if !rc.PlantedCaught {
		t.Errorf("control: a pair planted across unrelated threads was not reported unexplained")
	}
	if recall < 0.97 {
		t.Errorf("got recall %.4f of THREAD=REFS' co-threaded pairs, want ≥ 0.97", recall)
	}
	for i, p := range rc.Unexplained {
		if i == 10 {
			break
		}
		a, b := parsed[p[0]], parsed[p[1]]
		t.Errorf("unexplained pair %v: %q (id %s refs %v irt %v) and %q (id %s refs %v irt %v)",
			p, a.Subject, a.MessageID, a.References, a.InReplyTo, b.Subject, b.MessageID, b.References, b.InReplyTo)
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
