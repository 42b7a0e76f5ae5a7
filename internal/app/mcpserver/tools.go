package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

func ptr[T any](v T) *T { return &v }

// readOnly are the annotations of every reading tool.
func readOnly(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true,
		DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
}

// Page is the paging part of every listing's input.
type Page struct {
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor this tool gave for the previous page with the same arguments, unchanged; empty for the first page"`
	Limit  int    `json:"limit,omitempty" jsonschema:"items per page, 1 to 100 (default 20)"`
}

// ToolNames lists every tool the server can offer, the write tool last.
var ToolNames = []string{"status", "needs_reply", "followups", "queue_list", "queue_show", "explain",
	"search_mail", "contact_show", "decisions", "digest", "propose_reply"}

func (s *server) addTools(m *mcp.Server) {
	mcp.AddTool(m, &mcp.Tool{Name: "status", Annotations: readOnly("mailagent status"),
		Description: "Whether mailagent's watcher runs, each account's sync state, messages by state, today's automatic replies and tokens."}, s.status)
	mcp.AddTool(m, &mcp.Tool{Name: "needs_reply", Annotations: readOnly("Threads that need the owner's reply"),
		Description: "Threads whose last message is someone else's and expects an answer from the owner, earliest deadline first." + UntrustedNote}, s.needsReply)
	mcp.AddTool(m, &mcp.Tool{Name: "followups", Annotations: readOnly("Reply tracking"),
		Description: "Reply-tracking threads: needs_reply (the owner owes an answer) and awaiting_reply (the owner waits for one), or the states asked for." + UntrustedNote}, s.followups)
	mcp.AddTool(m, &mcp.Tool{Name: "queue_list", Annotations: readOnly("Approval queue"),
		Description: "mailagent's approval queue, newest first: drafts waiting for the owner, notices, messages that need review." + UntrustedNote}, s.queueList)
	mcp.AddTool(m, &mcp.Tool{Name: "queue_show", Annotations: readOnly("One queue item"),
		Description: "One queue item with its draft, gates and thread." + UntrustedNote}, s.queueShow)
	mcp.AddTool(m, &mcp.Tool{Name: "explain", Annotations: readOnly("Why mailagent decided"),
		Description: "The trace of one message (by trace id or Message-ID): each step, the decision, the gates." + UntrustedNote}, s.explain)
	mcp.AddTool(m, &mcp.Tool{Name: "search_mail", Annotations: readOnly("Search triaged mail"),
		Description: "Search the messages mailagent has triaged (its local store, not the mail server) by correspondent, subject words, date range, intent and decision, newest stored first. " +
			"Each call looks at a bounded number of stored messages: partial=true means it stopped early, so call again with next_cursor." + UntrustedNote}, s.searchMail)
	mcp.AddTool(m, &mcp.Tool{Name: "contact_show", Annotations: readOnly("One contact"),
		Description: "What mailagent remembers about one correspondent of an account: counts, whether the owner wrote to them, the summary and recent subjects." + UntrustedNote}, s.contactShow)
	mcp.AddTool(m, &mcp.Tool{Name: "decisions", Annotations: readOnly("Decided without asking"),
		Description: "Messages mailagent handled without asking the owner (archived, ignored, notified, auto-sent), newest stored first. " +
			"Each call looks at a bounded number of stored messages: partial=true means it stopped early, so call again with next_cursor." + UntrustedNote}, s.decisions)
	mcp.AddTool(m, &mcp.Tool{Name: "digest", Annotations: readOnly("Digest"),
		Description: "The owner's report of a period: auto-sent replies, items waiting, archived and ignored by category, messages that need review, tokens and cost." + UntrustedNote}, s.digest)
	if !s.o.ReadOnly {
		mcp.AddTool(m, &mcp.Tool{Name: "propose_reply",
			Annotations: &mcp.ToolAnnotations{Title: "Propose a reply for the owner to review", ReadOnlyHint: false,
				DestructiveHint: ptr(false), IdempotentHint: false, OpenWorldHint: ptr(false)},
			Description: "Propose the text of a reply to a message (by thread id, Message-ID, trace id or queue id). " +
				"It becomes a pending draft in mailagent's approval queue, marked as proposed by this client; nothing is sent: " +
				"the owner reviews, edits, approves or rejects it in mailagent. The recipient is chosen by mailagent: the message's authenticated sender only; " +
				"you cannot choose or add recipients. Mail without an authenticated sender cannot be answered this way. One proposal per message, " +
				"of at most " + strconv.Itoa(agent.MaxProposalChars) + " characters." + UntrustedNote}, s.proposeReply)
	}
}

// StatusIn takes nothing.
type StatusIn struct{}

// AccountState is one account's sync state.
type AccountState struct {
	Name     string    `json:"name"`
	State    string    `json:"state"`
	LastSync time.Time `json:"last_sync"`
	// Untrusted holds the last error: it may quote what a mail server
	// said, so it is outside text like mail's.
	Untrusted ServerText `json:"untrusted_external_content"`
}

// ServerText is text a server wrote (an error that quotes it), sanitised
// and bounded like mail text, and never instructions.
type ServerText struct {
	Error string `json:"error" jsonschema:"the account's last error, if any; it may quote a mail server"`
}

// StatusOut is mailagent's state.
type StatusOut struct {
	Watcher       bool           `json:"watcher" jsonschema:"a watcher is running"`
	Accounts      []AccountState `json:"accounts"`
	Counts        map[string]int `json:"counts" jsonschema:"messages by state"`
	AutoSentToday int            `json:"auto_sent_today"`
	AutoSendCap   int            `json:"auto_send_cap"`
	TokensInToday int64          `json:"tokens_in_today"`
	TokensOut     int64          `json:"tokens_out_today"`
}

func (s *server) status(ctx context.Context, _ *mcp.CallToolRequest, _ StatusIn) (*mcp.CallToolResult, StatusOut, error) {
	out := StatusOut{Accounts: []AccountState{}, Counts: map[string]int{}}
	err := s.with(ctx, func(svc api.Service) error {
		st, err := svc.Status(ctx)
		if err != nil {
			return err
		}
		out.Watcher, out.AutoSentToday, out.AutoSendCap = st.Watcher, st.AutoSentToday, st.AutoSendCap
		out.TokensInToday, out.TokensOut = st.TokensToday.TokensIn, st.TokensToday.TokensOut
		for k, v := range st.Counts {
			out.Counts[line(string(k))] = v
		}
		for _, a := range st.Accounts {
			if s.allowed(a.Name) {
				out.Accounts = append(out.Accounts, AccountState{Name: line(a.Name), State: line(a.State), LastSync: a.LastSync, Untrusted: ServerText{Error: line(a.Error)}})
			}
		}
		return nil
	})
	return nil, out, err
}

// FollowupsIn selects reply-tracking threads.
type FollowupsIn struct {
	Account string   `json:"account,omitempty" jsonschema:"only this account"`
	States  []string `json:"states,omitempty" jsonschema:"needs_reply, awaiting_reply, done, gave_up (default: the first two)"`
	Page
}

// NeedsReplyIn selects the threads that need the owner's reply.
type NeedsReplyIn struct {
	Account string `json:"account,omitempty" jsonschema:"only this account"`
	Page
}

// Followup is one tracked thread.
type Followup struct {
	ID         string    `json:"id"`
	Account    string    `json:"account"`
	ThreadID   string    `json:"thread_id"`
	State      string    `json:"state"`
	MessageKey string    `json:"message_key"`
	LastAt     time.Time `json:"last_at"`
	Deadline   time.Time `json:"deadline"`
	Nudges     int       `json:"nudges"`
	Untrusted  MailText  `json:"untrusted_external_content"`
}

// FollowupsOut is a page of tracked threads.
type FollowupsOut struct {
	Followups  []Followup `json:"followups"`
	NextCursor string     `json:"next_cursor" jsonschema:"pass it as cursor for the next page; empty at the end"`
}

func (s *server) needsReply(ctx context.Context, r *mcp.CallToolRequest, in NeedsReplyIn) (*mcp.CallToolResult, FollowupsOut, error) {
	return s.listFollowups(ctx, "needs_reply", FollowupsIn{Account: in.Account, States: []string{store.FollowupNeedsReply}, Page: in.Page})
}

func (s *server) followups(ctx context.Context, _ *mcp.CallToolRequest, in FollowupsIn) (*mcp.CallToolResult, FollowupsOut, error) {
	return s.listFollowups(ctx, "followups", in)
}

// listFollowups is a page of tracked threads, earliest deadline first
// (then id): the cursor is the last one's deadline and id. The service
// gives every thread in the states asked for (one per thread: far fewer
// than messages); the page is cut from them.
func (s *server) listFollowups(ctx context.Context, tool string, in FollowupsIn) (*mcp.CallToolResult, FollowupsOut, error) {
	out := FollowupsOut{Followups: []Followup{}}
	states := slices.Clone(in.States)
	slices.Sort(states)
	p, err := parsePage(tool, fingerprint(append([]string{in.Account}, states...)...), in.Cursor, in.Limit)
	if err == nil {
		err = s.account(in.Account)
	}
	for _, st := range in.States {
		if err == nil && !slices.Contains([]string{store.FollowupNeedsReply, store.FollowupAwaitingReply, store.FollowupDone, store.FollowupGaveUp}, st) {
			err = fmt.Errorf("%w: no state %q", ErrInvalid, line(st))
		}
	}
	if err != nil {
		return nil, out, err
	}
	err = s.with(ctx, func(svc api.Service) error {
		fus, err := svc.Followups(ctx, api.FollowupFilter{Account: in.Account, States: in.States})
		if err != nil {
			return err
		}
		fus = slices.DeleteFunc(fus, func(f store.Followup) bool { return !s.allowed(f.Account) })
		keyOf := func(f *store.Followup) key { return key{at: f.Deadline, id: f.ID} }
		sortKeyed(fus, keyOf, false)
		out.Followups, out.NextCursor = cutPage(fus, keyOf, false, p, func(f *store.Followup) Followup {
			return Followup{ID: line(f.ID), Account: line(f.Account), ThreadID: line(f.ThreadID), State: line(f.State),
				MessageKey: f.Message.String(), LastAt: f.LastAt, Deadline: f.Deadline, Nudges: f.Nudges,
				Untrusted: MailText{To: lines(f.Correspondents), Subject: line(f.Subject), MessageID: line(f.MessageID), Reasons: lines([]string{f.Reason})}}
		})
		return nil
	})
	return nil, out, err
}

// QueueListIn selects queue items.
type QueueListIn struct {
	Status  string `json:"status,omitempty" jsonschema:"pending, approved, rejected, sent, resolved, snoozed or failed (default: all)"`
	Kind    string `json:"kind,omitempty" jsonschema:"draft, notify or needs_review (default: all)"`
	Account string `json:"account,omitempty" jsonschema:"only this account"`
	Page
}

// QueueListOut is a page of the queue.
type QueueListOut struct {
	Items      []QueueItem `json:"items"`
	NextCursor string      `json:"next_cursor" jsonschema:"pass it as cursor for the next page; empty at the end"`
}

// queueList reads one page of the queue, newest first, from the store
// (through the watcher's socket when one runs): the page plus one index
// entry, never the whole queue. The cursor is the last item's creation
// time and id.
func (s *server) queueList(ctx context.Context, _ *mcp.CallToolRequest, in QueueListIn) (*mcp.CallToolResult, QueueListOut, error) {
	out := QueueListOut{Items: []QueueItem{}}
	p, err := parsePage("queue_list", fingerprint(in.Status, in.Kind, in.Account), in.Cursor, in.Limit)
	if err == nil {
		err = s.account(in.Account)
	}
	if err != nil {
		return nil, out, err
	}
	req := api.QueuePageRequest{Status: in.Status, Kind: in.Kind, Account: in.Account, Accounts: s.o.Accounts,
		Limit: p.limit, MaxBytes: storePageBytes}
	if p.after != nil {
		req.After = store.QueueCursor{CreatedAt: p.after.at, ID: p.after.id}
	}
	err = s.with(ctx, func(svc api.Service) error {
		pg, err := api.QueuePage(ctx, svc, req)
		if err != nil {
			return err
		}
		b := newBudget()
		for i := range pg.Items {
			q := queueItem(&pg.Items[i], maxSnippet)
			if !b.take(q, i == 0) {
				out.NextCursor = p.cursor(queueKey(&pg.Items[i-1]))
				return nil
			}
			out.Items = append(out.Items, q)
		}
		if !pg.Next.IsZero() {
			out.NextCursor = p.cursor(key{at: pg.Next.CreatedAt, id: pg.Next.ID})
		}
		return nil
	})
	return nil, out, err
}

func queueKey(q *store.QueueItem) key { return key{at: q.CreatedAt, id: q.ID} }

// IDIn names one record.
type IDIn struct {
	ID string `json:"id" jsonschema:"the id as mailagent gave it"`
}

// QueueShowOut is one queue item with its context.
type QueueShowOut struct {
	Item QueueItem `json:"item"`
	// Thread holds the thread's latest messages, oldest first.
	Thread       []Message `json:"thread"`
	OutboxStatus string    `json:"outbox_status" jsonschema:"the send's state when the item was approved (empty otherwise)"`
}

func (s *server) queueShow(ctx context.Context, _ *mcp.CallToolRequest, in IDIn) (*mcp.CallToolResult, QueueShowOut, error) {
	out := QueueShowOut{Thread: []Message{}}
	if err := checkID("queue id", in.ID); err != nil {
		return nil, out, err
	}
	err := s.with(ctx, func(svc api.Service) error {
		var err error
		out, err = s.queueDetail(ctx, svc, in.ID)
		return err
	})
	return nil, out, err
}

func (s *server) queueDetail(ctx context.Context, svc api.Service, id string) (QueueShowOut, error) {
	out := QueueShowOut{Thread: []Message{}}
	d, err := svc.QueueItem(ctx, id)
	if err != nil {
		return out, err
	}
	if !s.allowed(d.Item.Account) {
		return out, errNotFound
	}
	out.Item = queueItem(&d.Item, maxBody)
	th := d.Thread
	if len(th) > maxList {
		th = th[len(th)-maxList:]
	}
	for i := range th {
		if s.allowed(th[i].Account) {
			out.Thread = append(out.Thread, message(&th[i], maxSnippet))
		}
	}
	if d.Outbox != nil {
		out.OutboxStatus = line(d.Outbox.Status)
	}
	return out, nil
}

// ExplainIn names a message.
type ExplainIn struct {
	Ref string `json:"ref" jsonschema:"a trace id or a Message-ID"`
}

// Step is one step of a trace.
type Step struct {
	Name      string    `json:"name"`
	Start     time.Time `json:"start"`
	LatencyMS int64     `json:"latency_ms"`
	TokensIn  int32     `json:"tokens_in"`
	TokensOut int32     `json:"tokens_out"`
	Retries   int       `json:"retries"`
	Failed    bool      `json:"failed"`
}

// ExplainOut is a trace and its message.
type ExplainOut struct {
	TraceID  string    `json:"trace_id"`
	Decision string    `json:"decision"`
	Started  time.Time `json:"started"`
	Steps    []Step    `json:"steps"`
	Gates    []Gate    `json:"gates"`
	// Message is absent when its record is gone.
	Message *Message `json:"message,omitempty"`
	// Untrusted holds the trace's reasons and step errors.
	Untrusted MailText `json:"untrusted_external_content"`
}

func (s *server) explain(ctx context.Context, _ *mcp.CallToolRequest, in ExplainIn) (*mcp.CallToolResult, ExplainOut, error) {
	out := ExplainOut{Steps: []Step{}, Gates: []Gate{}}
	if err := checkID("ref", in.Ref); err != nil {
		return nil, out, err
	}
	err := s.with(ctx, func(svc api.Service) error {
		e, err := svc.Explain(ctx, in.Ref)
		if err != nil {
			return err
		}
		t := e.Trace
		if t == nil || !s.allowed(t.Message.Account) {
			return errNotFound
		}
		out.TraceID, out.Decision, out.Started, out.Gates = line(t.TraceID), line(t.Decision), t.Started, gates(t.Gates)
		reasons := slices.Clone(t.Reasons)
		for _, st := range t.Steps {
			out.Steps = append(out.Steps, Step{Name: line(st.Name), Start: st.Start, LatencyMS: st.LatencyMS,
				TokensIn: st.TokensIn, TokensOut: st.TokensOut, Retries: st.Retries, Failed: st.Error != ""})
			if st.Error != "" {
				reasons = append(reasons, st.Name+": "+st.Error)
			}
		}
		out.Untrusted = MailText{MessageID: line(t.MessageID), Reasons: lines(reasons)}
		if e.Message != nil {
			m := message(e.Message, maxBody)
			out.Message = &m
			out.Untrusted.From, out.Untrusted.Subject = m.Untrusted.From, m.Untrusted.Subject
		}
		return nil
	})
	return nil, out, err
}
