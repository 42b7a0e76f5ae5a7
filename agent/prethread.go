package agent

import (
	"errors"
	"fmt"

	"github.com/mailagent/mailagent/internal/mail"
)

// Prethread adds the threading headers of a whole batch of messages to the
// threader before any of them is analysed. The thread step then finds
// every message already there, so the thread id it records (in the
// record, the stored outcome, and triage's --json line) is the id of its
// thread over the whole batch: the partition is a function of the set of
// messages (and of the threader's contents before the batch), never of the
// order in which concurrent workers reach them. Without it, a message
// analysed before a later one merged its thread keeps the older id
// wherever it was already printed or, in a dry run, reported.
//
// An input with an empty MessageID stands for a message whose id the
// full parse synthesizes from its body (mail.Message.Synthesized): only
// its links are added (mail.Threader.Link), since its own key is not
// known from the header.
//
// Merges it makes are applied to stored records as the thread step
// applies them (RelabelThread, under LockMerges), except in a dry run,
// which writes nothing. Adding a message again later is a no-op, so the
// thread step reports no merges for a prethreaded batch.
func (p *Pipeline) Prethread(ins []mail.ThreadInput) error {
	defer p.Threader.LockMerges()()
	var err error
	for _, in := range ins {
		add := p.Threader.Add
		if in.MessageID == "" {
			add = p.Threader.Link
		}
		threadID, merged := add(in)
		if p.DryRun {
			continue
		}
		for _, old := range merged {
			if rerr := p.Store.RelabelThread(old, threadID); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("relabel thread: %w", err)
	}
	return nil
}
