package apitest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

// Sentinels are the exported errors a Service error is matched against
// with errors.Is, by name. An error must match the same ones through a
// Client as through Local.
var Sentinels = []struct {
	Name string
	Err  error
}{
	{"api.ErrNoActions", api.ErrNoActions},
	{"api.ErrBadRequest", api.ErrBadRequest},
	{"api.ErrNoWatcher", api.ErrNoWatcher},
	{"agent.ErrNotActionable", agent.ErrNotActionable},
	{"agent.ErrAmbiguousSend", agent.ErrAmbiguousSend},
	{"agent.ErrModelOutput", agent.ErrModelOutput},
	{"store.ErrNotFound", store.ErrNotFound},
	{"store.ErrConflict", store.ErrConflict},
	{"store.ErrLocked", store.ErrLocked},
	{"store.ErrCorrupt", store.ErrCorrupt},
	{"context.Canceled", context.Canceled},
	{"context.DeadlineExceeded", context.DeadlineExceeded},
}

// Kinds names the sentinels err matches ("nil" for no error, "other" for
// an error that matches none).
func Kinds(err error) string {
	if err == nil {
		return "nil"
	}
	var names []string
	for _, s := range Sentinels {
		if errors.Is(err, s.Err) {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return "other"
	}
	return strings.Join(names, "+")
}

// Entry is one observation of a case: an error (its kinds, message and
// temporariness) or a piece of state.
type Entry struct {
	Case, Step string
	Kinds      string
	Message    string
	Temporary  bool
	State      string
}

func (e Entry) String() string {
	if e.State != "" || e.Kinds == "" {
		return fmt.Sprintf("%s / %s: state %s", e.Case, e.Step, e.State)
	}
	return fmt.Sprintf("%s / %s: %s %q temporary=%v", e.Case, e.Step, e.Kinds, e.Message, e.Temporary)
}

// Transcript is everything a Suite run observed, in order.
type Transcript struct {
	Entries []Entry
}

// varying are the parts of a message or state that differ between two
// worlds without meaning anything: generated Message-IDs and trace ids,
// socket paths.
var varying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[A-Za-z0-9._-]{12,}@example\.com`), "MSGID@example.com"},
	{regexp.MustCompile(`tr_[0-9a-f]{24}|tr_[0-9a-f]{16}`), "tr_ID"},
	{regexp.MustCompile(`mem_[0-9a-f]{29}`), "mem_ID"},
	{regexp.MustCompile(`ex_[0-9a-f]{29}`), "ex_ID"},
	{regexp.MustCompile(`/tmp/[^ :]+`), "/tmp/PATH"},
	{regexp.MustCompile(`127\.0\.0\.1:[0-9]+`), "127.0.0.1:PORT"},
}

// Normalize replaces what varies between worlds by placeholders.
func Normalize(s string) string {
	for _, v := range varying {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Compare fails t unless the two transcripts are the same entry by entry.
func Compare(t *testing.T, aName string, a *Transcript, bName string, b *Transcript) {
	t.Helper()
	if a == nil || b == nil {
		t.Fatal("a transcript is missing: did a run stop early?")
	}
	n := max(len(a.Entries), len(b.Entries))
	diffs := 0
	for i := range n {
		var ea, eb Entry
		if i < len(a.Entries) {
			ea = a.Entries[i]
		}
		if i < len(b.Entries) {
			eb = b.Entries[i]
		}
		if ea != eb {
			diffs++
			t.Errorf("entry %d differs:\n%-7s %s\n%-7s %s", i, aName, ea, bName, eb)
		}
	}
	if diffs == 0 && len(a.Entries) == 0 {
		t.Error("empty transcripts: nothing was compared")
	}
}
