package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// rebuildingStore rebuilds the pipeline's threader from the store (as a
// watcher's daemon.boundThreader does) just before the first commit of
// the message whose subject is at, which is the worst moment: the message
// is in the threader but not yet where the rebuild reads.
type rebuildingStore struct {
	*store.Store
	th   *mail.Threader
	at   string
	done bool
}

func (s *rebuildingStore) PutMessage(rec *store.MessageRecord) error {
	if rec.Subject == s.at && !s.done {
		s.done = true
		if err := s.th.Rebuild(func(add func(mail.ThreadInput)) error {
			return s.ThreadInputs(time.Time{}, 0, func(in mail.ThreadInput) error { add(in); return nil })
		}); err != nil {
			return err
		}
	}
	return s.Store.PutMessage(rec)
}

// A threader rebuild between a message's thread step and its first commit
// dropped the message, so a reply to it started a thread of its own (the
// flake of TestWatcherThreaderStaysBounded). The pipeline now adds the
// message again once it is stored.
func TestRebuildBeforeCommitKeepsThread(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Noted."}
	p, st, _ := newTestPipeline(t, model, "draft")
	rs := &rebuildingStore{Store: st, th: p.Threader, at: "Topic"}
	p.Store = rs
	ctx := context.Background()

	// The parent's id sorts after its subject key ("subj:topic"), so its
	// thread id comes from the subject: a reply that finds only a dummy
	// for the parent gets another id.
	parent := input("Bob <bob@example.org>", "Topic", "A question?")
	parent.Raw = []byte(strings.Replace(string(parent.Raw), "Message-ID: <m", "Message-ID: <topic-m", 1))
	out, err := p.Process(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	if !rs.done {
		t.Fatal("the rebuild never ran: the test does not test anything")
	}
	parentID := out.Record.MessageID
	if p.Threader.ThreadID(parentID) == "" {
		t.Errorf("the parent is not in the threader after the rebuild")
	}
	reply := input("Bob <bob@example.org>", "Re: Topic", "And another thing.",
		"In-Reply-To: <"+parentID+">", "References: <"+parentID+">")
	rout, err := p.Process(ctx, reply)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetMessage(out.Record.MessageKey)
	if err != nil {
		t.Fatal(err)
	}
	if rout.Record.ThreadID == "" || rout.Record.ThreadID != got.ThreadID {
		t.Errorf("the reply's thread %q, its parent's stored thread %q: want the same", rout.Record.ThreadID, got.ThreadID)
	}
}
