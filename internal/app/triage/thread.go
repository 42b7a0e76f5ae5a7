package triage

import (
	"context"
	"fmt"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
)

// prethreadBatch is how many headers prethread fetches per FETCH command,
// and prethreadHeaderLimit caps the bytes read of one message's header.
const (
	prethreadBatch       = 500
	prethreadHeaderLimit = 1 << 20
)

// prethread gives the pipeline's threader the threading headers of every
// message triage is about to analyse (BODY.PEEK[HEADER], in UID order,
// prethreadBatch at a time), before any worker starts: see
// agent.Pipeline.Prethread. With it, every thread id triage prints with
// --json, keeps in a dry run or stores is the id of the thread over the
// whole set of messages, whatever order the workers finish in.
func prethread(ctx context.Context, c *imapsync.Client, uids []uint32, p *agent.Pipeline) error {
	for start := 0; start < len(uids); start += prethreadBatch {
		batch := uids[start:min(start+prethreadBatch, len(uids))]
		hdrs, err := c.FetchHeaders(ctx, batch, prethreadHeaderLimit)
		if err != nil {
			return fmt.Errorf("fetch headers for threading: %w", err)
		}
		ins := make([]mail.ThreadInput, 0, len(hdrs))
		for _, uid := range batch { // UID order: the map's is random
			h, ok := hdrs[uid]
			if !ok {
				continue
			}
			// Only the threading fields: the workers parse the whole
			// message. A missing Message-ID is hashed from the body
			// there; here it is "" and only the message's links count.
			in, _ := mail.HeaderThreadInput(h)
			ins = append(ins, in)
		}
		if err := p.Prethread(ins); err != nil {
			return err
		}
	}
	return nil
}
