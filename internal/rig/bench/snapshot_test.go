package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// replyClassification: every message the model sees asks for a reply, so
// the decide step evaluates (and snapshots) every gate: the larger case.
const replyClassification = `{"intents":["information_request"],"risk":"low","action":"reply",` +
	`"requires_approval":false,"confidence":0.9,"summary":"asks a question","comments":"a plain question from a person"}`

// snapshotGrowth triages n corpus messages (every sixth file of the
// SpamAssassin corpus, so ham and spam, lists and people, in corpus order)
// through agent.Pipeline.Triage into a fresh store, with step snapshots on
// or off, and returns the database file size after Close and the bytes
// the snapshot bucket holds (keys and compressed values).
//
// With watch, each message goes through Pipeline.Process instead (watch's
// path, policy mode "review"): the answered, tool, draft and queue steps
// of every message that gets a draft, and the mailbox step of every
// archived one, run and keep their snapshots too.
func snapshotGrowth(t *testing.T, files []string, on, watch bool) (fileBytes, snapBytes int64, snapTraces, modelCalls int, stepSnaps map[string]int) {
	stepSnaps = map[string]int{}
	t.Helper()
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(stateDir(t), "mailagent.db")
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	const account = "bench"
	p := &agent.Pipeline{
		Store: st,
		Classifier: &agent.LLMClassifier{Prompts: ps, Model: llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) {
			modelCalls++
			return &llm.Response{Text: replyClassification, FinishReason: "STOP", Model: "fake"}, nil
		})},
		Threader: mail.NewThreader(),
		Accounts: map[string]agent.Account{account: {
			Name:  account,
			Owner: agent.Owner{Name: "Bench Owner", Addresses: []string{"owner@example.test"}},
		}},
		Snapshots: on,
		Redactor:  config.NewRedactor(config.NewSecret("bench-api-key-0000")),
	}
	if watch {
		p.Policy = agent.Policy{Mode: "review", MinConfidence: 0.8, NeverAuto: agent.DefaultNeverAuto, MaxPerContactPerDay: 3, MaxPerDay: 20, MaxDraftChars: 4000}
		p.Accounts[account] = agent.Account{Name: account, Owner: p.Accounts[account].Owner, From: mail.Address{Name: "Bench Owner", Email: "owner@example.test"}}
		p.Actor = &agent.Actor{Store: st, Mailer: benchMailer{}, Drafter: &agent.LLMDrafter{Prompts: ps,
			Model: llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) {
				modelCalls++
				return &llm.Response{Text: benchDraft, FinishReason: "STOP", Model: "fake"}, nil
			})}}
	}
	for i, f := range files {
		raw, err := ReadMessage(f)
		if err != nil {
			t.Fatal(err)
		}
		in := agent.Input{Key: store.MessageKey{Account: account, Mailbox: "corpus", UIDValidity: 1, UID: uint32(i + 1)}, Raw: raw}
		var out *agent.Outcome
		if watch {
			out, err = p.Process(context.Background(), in)
		} else {
			out, err = p.Triage(context.Background(), in, false)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, s := range out.Trace.Steps {
			if s.Snapshot != nil {
				stepSnaps[s.Name]++
			}
		}
	}
	snapBytes, snapTraces, err = st.SnapshotBytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size(), snapBytes, snapTraces, modelCalls, stepSnaps
}

// TestSnapshotGrowth reports the state database's growth per 1,000
// messages with trace.snapshots on and off (BENCHMARKS.md, section 16):
//
//	MAILAGENT_CORPORA=/work/shared/corpora MAILAGENT_BENCH_SNAPSHOTS=1 go test -count=1 -run TestSnapshotGrowth -v ./internal/rig/bench
//
// Subtest triage is triage's path; watch is watch's (see snapshotGrowth).
func TestSnapshotGrowth(t *testing.T) {
	t.Parallel()
	if os.Getenv("MAILAGENT_BENCH_SNAPSHOTS") == "" {
		t.Skip("set MAILAGENT_BENCH_SNAPSHOTS=1 to measure (about a minute)")
	}
	all, err := corpusFilesEnv()
	if errors.Is(err, ErrNoCorpus) {
		t.Skipf("needs the shared corpora: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := 0; i < len(all) && len(files) < 1000; i += 6 {
		files = append(files, all[i])
	}
	for _, watch := range []bool{false, true} {
		name := "triage"
		if watch {
			name = "watch"
		}
		t.Run(name, func(t *testing.T) { reportSnapshotGrowth(t, files, watch) })
	}
}

func reportSnapshotGrowth(t *testing.T, files []string, watch bool) {
	offFile, offSnap, _, _, _ := snapshotGrowth(t, files, false, watch)
	onFile, onSnap, onTraces, calls, steps := snapshotGrowth(t, files, true, watch)
	if offSnap != 0 {
		t.Errorf("snapshots off: the snapshot bucket holds %d bytes", offSnap)
	}
	if onTraces != len(files) {
		t.Errorf("snapshots on: %d traces have snapshots, want %d", onTraces, len(files))
	}
	per := func(b int64) float64 { return float64(b) * 1000 / float64(len(files)) / (1 << 20) }
	t.Logf("%d messages, %d model calls; steps with a snapshot: %v", len(files), calls, steps)
	t.Logf("%d messages: file off %d B, on %d B; snapshot bucket %d B over %d traces", len(files), offFile, onFile, onSnap, onTraces)
	t.Logf("per 1,000 messages: file off %.2f MiB, on %.2f MiB (+%.2f MiB); snapshot bucket %.2f MiB (%.1f KiB per message)",
		per(offFile), per(onFile), per(onFile-offFile), per(onSnap), float64(onSnap)/float64(len(files))/1024)
}

// benchDraft is the fake drafter's answer: a reply of about 600
// characters, the size of a short real one.
var benchDraft = `{"body":` + strconv.Quote(strings.Repeat("Thank you for your message. I will look at it this week and come back to you. ", 8)) +
	`,"tone":"friendly","needs_owner_input":false}`

// benchMailer is a mailbox that holds no reply to anything and carries
// out archive decisions (the move itself is not timed here, only what the
// trace keeps of it).
type benchMailer struct{}

func (benchMailer) Send(context.Context, string, string, []string, []byte) error { return nil }
func (benchMailer) AppendSent(context.Context, string, []byte) error             { return nil }
func (benchMailer) SentHas(context.Context, string, string) (bool, error)        { return false, nil }
func (benchMailer) AppendDraft(context.Context, string, []byte) (uint32, error)  { return 1, nil }
func (benchMailer) DeleteDraft(context.Context, string, uint32) error            { return nil }
func (benchMailer) Answered(context.Context, *store.MessageRecord) (bool, string, error) {
	return false, "", nil
}
func (benchMailer) MarkAnswered(context.Context, *store.MessageRecord) error { return nil }
func (benchMailer) Archive(_ context.Context, _ string, k store.MessageKey, _ string) (string, error) {
	return fmt.Sprintf("moved to Archive (UID %d of %s)", k.UID, k.Mailbox), nil
}
func (benchMailer) Label(context.Context, string, store.MessageKey, string, []string) error {
	return nil
}
func (benchMailer) Labels(string, *store.MessageRecord) []string { return nil }

// corpusFilesEnv is CorpusFiles, or the same folders under
// $MAILAGENT_CORPORA/spamassassin when that is set (a worktree whose
// ../shared is not the corpora checkout).
func corpusFilesEnv() ([]string, error) {
	dir := os.Getenv("MAILAGENT_CORPORA")
	if dir == "" {
		return CorpusFiles(SpamAssassinDirs...)
	}
	var out []string
	for _, d := range SpamAssassinDirs {
		ents, err := os.ReadDir(filepath.Join(dir, "spamassassin", d))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoCorpus, err)
		}
		for _, e := range ents { // ReadDir sorts by name
			if e.Type().IsRegular() {
				out = append(out, filepath.Join(dir, "spamassassin", d, e.Name()))
			}
		}
	}
	return out, nil
}
