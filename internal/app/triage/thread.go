package triage

import (
	"context"
	"fmt"
	"sync"

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
//
// The next batch is fetched while this one is read (a goroutine owned by
// this call, ended before it returns): the server's sending and
// go-imap's decoding overlap the header scan and the threader, instead
// of taking turns with them.
func prethread(ctx context.Context, c *imapsync.Client, uids []uint32, p *agent.Pipeline) error {
	type fetched struct {
		batch []uint32
		hdrs  map[uint32][]byte
		err   error
	}
	ready := make(chan fetched, 1)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the fetcher ends first
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ready)
		for start := 0; start < len(uids); start += prethreadBatch {
			batch := uids[start:min(start+prethreadBatch, len(uids))]
			hdrs, err := c.FetchHeaders(ctx, batch, prethreadHeaderLimit)
			select {
			case ready <- fetched{batch, hdrs, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for f := range ready {
		if f.err != nil {
			return fmt.Errorf("fetch headers for threading: %w", f.err)
		}
		ins := make([]mail.ThreadInput, 0, len(f.hdrs))
		for _, uid := range f.batch { // UID order: the map's is random
			h, ok := f.hdrs[uid]
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
	return ctx.Err()
}
