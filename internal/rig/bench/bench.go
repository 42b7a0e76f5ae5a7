// Package bench holds mailagent's performance measurements: Go benchmarks
// (*_test.go) and the small helpers that the scripts/bench-*.sh drivers
// use through cmd/benchtool. BENCHMARKS.md at the repository root records
// the figures and the exact commands that reproduce them.
//
// Contract:
//   - Nothing here is imported by the product; it only observes the product
//     from the outside (the real binary, the real protocols) or wires it
//     exactly as cmd/mailagent does.
//   - Measurements print figures; they never assert timings. A helper that
//     cannot reach what it needs returns an error naming it.
//   - FakeGemini answers the Gemini REST generateContent call with one
//     fixed, schema-valid classification after an optional delay, so the
//     model costs a known, fixed time (zero by default). FakeOpenAI answers
//     the OpenAI chat completions call with the same classification, the
//     same delay and the same counters, so the two providers can be
//     compared on equal terms.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// IgnoreClassification is the model answer FakeGemini gives: valid against
// agent.ClassificationSchema, action "ignore", so the pipeline decides
// "ignore" and makes no draft call. Each external message therefore costs
// exactly one model call.
const IgnoreClassification = `{"intents":["fyi_notification"],"risk":"low","action":"ignore",` +
	`"requires_approval":false,"confidence":0.9,"summary":"benchmark","comments":"fixed benchmark answer"}`

// FakeGemini is an http.Handler speaking the generateContent call of the
// Gemini REST API (the path google.golang.org/genai uses). It is safe for
// concurrent use.
type FakeGemini struct {
	// Delay is how long each answer waits (the model's latency). A client
	// that goes away ends the wait.
	Delay time.Duration

	calls    atomic.Int64
	inFlight atomic.Int64
	maxInFl  atomic.Int64
	first    atomic.Int64 // unix nanos of the first request
	last     atomic.Int64 // unix nanos of the last answer
}

// Stats is what a FakeGemini saw.
type Stats struct {
	Calls       int64
	MaxInFlight int64
	First, Last time.Time // first request arrival, last answer sent
}

// Stats returns the counters so far.
func (f *FakeGemini) Stats() Stats {
	s := Stats{Calls: f.calls.Load(), MaxInFlight: f.maxInFl.Load()}
	if v := f.first.Load(); v != 0 {
		s.First = time.Unix(0, v)
	}
	if v := f.last.Load(); v != 0 {
		s.Last = time.Unix(0, v)
	}
	return s
}

func (f *FakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, ":generateContent") {
		http.Error(w, `{"error":{"code":404,"message":"not generateContent","status":"NOT_FOUND"}}`, http.StatusNotFound)
		return
	}
	f.answer(w, r, fakeReply)
}

// answer counts the call, waits Delay and writes reply: the part of a
// fake model that is the same whatever the wire.
func (f *FakeGemini) answer(w http.ResponseWriter, r *http.Request, reply []byte) {
	f.first.CompareAndSwap(0, time.Now().UnixNano())
	f.calls.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFl.Load()
		if n <= m || f.maxInFl.CompareAndSwap(m, n) {
			break
		}
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(reply)
	f.last.Store(time.Now().UnixNano())
}

// fakeReply is the generateContent response carrying IgnoreClassification.
var fakeReply = func() []byte {
	b, err := json.Marshal(map[string]any{
		"candidates": []any{map[string]any{
			"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": IgnoreClassification}}},
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
		"modelVersion":  "bench-fake",
	})
	if err != nil {
		panic(err) // a constant literal; cannot fail
	}
	return b
}()

// Stack is the address of the end-to-end mail stack, read from the
// environment scripts/e2e-stack.sh writes (source /tmp/mailagent-e2e/env).
type Stack struct {
	IMAPAddr string
	SMTPAddr string
	CAFile   string
	Users    map[string]string // address → password
}

// StackFromEnv reads the stack's address from the environment.
func StackFromEnv() (*Stack, error) {
	if os.Getenv("MAILAGENT_E2E") != "1" {
		return nil, errors.New("MAILAGENT_E2E is not 1: run `bash scripts/e2e-stack.sh start` and `source /tmp/mailagent-e2e/env`")
	}
	s := &Stack{
		IMAPAddr: os.Getenv("MAILAGENT_E2E_IMAP_HOST") + ":" + os.Getenv("MAILAGENT_E2E_IMAP_PORT"),
		SMTPAddr: os.Getenv("MAILAGENT_E2E_SMTP_HOST") + ":" + os.Getenv("MAILAGENT_E2E_SMTP_PORT"),
		CAFile:   os.Getenv("MAILAGENT_E2E_CA"),
		Users:    map[string]string{},
	}
	for _, pair := range strings.Split(os.Getenv("MAILAGENT_E2E_USERS"), ",") {
		if u, p, ok := strings.Cut(pair, ":"); ok {
			s.Users[strings.ToLower(strings.TrimSpace(u))] = p
		}
	}
	return s, nil
}

// Password returns the password of a stack user.
func (s *Stack) Password(user string) (string, error) {
	p, ok := s.Users[strings.ToLower(user)]
	if !ok {
		return "", fmt.Errorf("no stack user %q in MAILAGENT_E2E_USERS", user)
	}
	return p, nil
}

// RepoRoot is the directory holding go.mod (see e2e.FindRepoRoot).
func RepoRoot() (string, error) { return e2e.FindRepoRoot() }

// SpamAssassinDirs are the corpus folders, ham first.
var SpamAssassinDirs = []string{"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"}

// HamDirs are the ham folders of the SpamAssassin corpus.
var HamDirs = []string{"easy-ham-1", "easy-ham-2", "hard-ham-1"}

// ErrNoCorpus means the shared corpora checkout is absent.
var ErrNoCorpus = errors.New("corpus not found")

// CorpusFiles lists the files of the given SpamAssassin folders under
// <repo>/../shared/corpora/spamassassin, sorted by folder then name.
func CorpusFiles(dirs ...string) ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(root, "..", "shared", "corpora", "spamassassin")
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w at %s", ErrNoCorpus, base)
	}
	var out []string
	for _, d := range dirs {
		ents, err := os.ReadDir(filepath.Join(base, d))
		if err != nil {
			return nil, fmt.Errorf("read corpus %s: %w", d, err)
		}
		var names []string
		for _, e := range ents {
			if e.Type().IsRegular() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, filepath.Join(base, d, n))
		}
	}
	return out, nil
}

// ReadMessage reads one corpus file and strips its mbox "From " line.
func ReadMessage(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(raw, []byte("From ")) {
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			raw = raw[i+1:]
		}
	}
	return raw, nil
}

// CRLF turns every bare LF of raw into CRLF, as IMAP APPEND and SMTP DATA
// expect.
func CRLF(raw []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(raw) + len(raw)/40)
	for i, b := range raw {
		if b == '\n' && (i == 0 || raw[i-1] != '\r') {
			out.WriteByte('\r')
		}
		out.WriteByte(b)
	}
	return out.Bytes()
}

// Percentile returns the p-th percentile (0..100) of sorted xs by the
// nearest-rank method; 0 for an empty slice.
func Percentile[T int | int64 | float64 | time.Duration](sorted []T, p float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// Millis formats d as milliseconds with one decimal.
func Millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

// WaitDone waits for ctx or d, whichever ends first.
func WaitDone(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
