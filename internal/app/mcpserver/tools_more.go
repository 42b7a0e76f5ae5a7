package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// SearchIn selects triaged messages; every field narrows.
type SearchIn struct {
	Account       string `json:"account,omitempty" jsonschema:"only this account"`
	Correspondent string `json:"correspondent,omitempty" jsonschema:"part of an address or domain of the sender or a recipient"`
	Subject       string `json:"subject,omitempty" jsonschema:"words that must all appear in the subject"`
	Since         string `json:"since,omitempty" jsonschema:"from this date (2026-01-02 or RFC 3339)"`
	Until         string `json:"until,omitempty" jsonschema:"before this date"`
	Intent        string `json:"intent,omitempty" jsonschema:"an intent the classifier gave: scheduling, information_request, action_request, introduction_networking, sales_vendor, fyi_notification, sensitive_legal_financial, complaint, follow_up, spam or unknown_ambiguous"`
	Decision      string `json:"decision,omitempty" jsonschema:"auto_send, queue, notify, archive, ignore or needs_review"`
	Page
}

// MessagesOut is a page of messages.
type MessagesOut struct {
	Messages   []Message `json:"messages"`
	NextCursor string    `json:"next_cursor" jsonschema:"pass it as cursor for the next page; empty at the end"`
	Partial    bool      `json:"partial" jsonschema:"true when this call stopped looking before the page was full (each call examines a bounded number of stored messages): the page may be short or empty, and more may match; pass next_cursor to go on"`
}

func (s *server) searchMail(ctx context.Context, _ *mcp.CallToolRequest, in SearchIn) (*mcp.CallToolResult, MessagesOut, error) {
	out := MessagesOut{Messages: []Message{}}
	p, err := parsePage("search_mail", fingerprint(in.Account, in.Correspondent, in.Subject, in.Since, in.Until, in.Intent, in.Decision), in.Cursor, in.Limit)
	if err == nil {
		err = s.account(in.Account)
	}
	var since, until time.Time
	if err == nil {
		since, err = parseDate("since", in.Since)
	}
	if err == nil {
		until, err = parseDate("until", in.Until)
	}
	if err == nil && in.Intent != "" && !slices.Contains(agent.Intents, in.Intent) {
		err = fmt.Errorf("%w: intent %q is not one of %s", ErrInvalid, line(in.Intent), strings.Join(agent.Intents, ", "))
	}
	if err == nil && in.Decision != "" && !slices.Contains(decisions, in.Decision) {
		err = fmt.Errorf("%w: decision %q is not one of %s", ErrInvalid, line(in.Decision), strings.Join(decisions, ", "))
	}
	if err != nil {
		return nil, out, err
	}
	req := api.MessagePageRequest{Account: in.Account, Since: since, Until: until, Intent: in.Intent, Correspondent: in.Correspondent}
	if in.Decision != "" {
		req.Decisions = []string{in.Decision}
	}
	if in.Subject != "" {
		req.Subject = []string{in.Subject}
	}
	return s.messagePage(ctx, p, in.Account, req)
}

// decisions are the values search_mail's decision filter takes.
var decisions = []string{agent.DecisionAutoSend, agent.DecisionQueue, agent.DecisionNotify, agent.DecisionArchive,
	agent.DecisionIgnore, agent.DecisionNeedsReview}

// messagePage reads one page of messages (api.MessagePage: through the
// watcher's socket or over the store, from the message index, examining
// at most Options.MaxScan entries) after p's cursor, limited to the accounts the
// client may see and to account when given, and cuts it to the byte
// budget.
func (s *server) messagePage(ctx context.Context, p page, account string, req api.MessagePageRequest) (*mcp.CallToolResult, MessagesOut, error) {
	out := MessagesOut{Messages: []Message{}}
	after, err := s.messageCursor(p, account)
	if err != nil {
		return nil, out, err
	}
	req.After, req.Accounts, req.Limit, req.MaxBytes, req.MaxScan = after, s.o.Accounts, p.limit, storePageBytes, s.o.MaxScan
	err = s.with(ctx, func(svc api.Service) error {
		pg, err := api.MessagePage(ctx, svc, req)
		if err != nil {
			return err
		}
		b := newBudget()
		for i := range pg.Messages {
			m := message(&pg.Messages[i], maxSnippet)
			if !b.take(m, i == 0) {
				out.NextCursor = p.cursor(messageKey(store.MessageCursorOf(&pg.Messages[i-1])))
				return nil
			}
			out.Messages = append(out.Messages, m)
		}
		if !pg.Next.IsZero() {
			out.NextCursor, out.Partial = p.cursor(messageKey(pg.Next)), pg.Partial
		}
		return nil
	})
	return nil, out, err
}

// boundaryID is the id of a cursor that stands before every message
// stored at its time (store.MessageCursor without a key).
const boundaryID = "-"

// messageKey is a store position as a cursor's key: the time a message
// was stored and its key as JSON, or boundaryID.
func messageKey(c store.MessageCursor) key {
	if c.Key == nil {
		return key{at: c.CreatedAt, id: boundaryID}
	}
	b, err := json.Marshal(c.Key)
	if err != nil {
		return key{at: c.CreatedAt, id: boundaryID} // cannot happen: a struct of strings and numbers
	}
	return key{at: c.CreatedAt, id: string(b)}
}

// messageCursor reads p's cursor back into a store position, refusing one
// this server could not have given for these arguments: a key that is
// not a message key, or one of an account the client may not see or did
// not ask for.
func (s *server) messageCursor(p page, account string) (store.MessageCursor, error) {
	if p.after == nil {
		return store.MessageCursor{}, nil
	}
	c := store.MessageCursor{CreatedAt: p.after.at}
	if p.after.id == boundaryID {
		if c.CreatedAt.IsZero() {
			return c, cursorError("is not one this server gave")
		}
		return c, nil
	}
	var k store.MessageKey
	dec := json.NewDecoder(strings.NewReader(p.after.id))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil || dec.More() || k.Account == "" || k.Mailbox == "" ||
		strings.ContainsRune(k.Account+k.Mailbox, 0) || !s.allowed(k.Account) || (account != "" && k.Account != account) {
		return c, cursorError("is not one this server gave")
	}
	c.Key = &k
	return c, nil
}

// storeOf is the service's store, bound to ctx over the socket.
func storeOf(ctx context.Context, svc api.Service) api.RemoteStore {
	if c, ok := svc.(*api.Client); ok {
		return c.StoreContext(ctx)
	}
	return svc.Store()
}

// ContactIn names a contact.
type ContactIn struct {
	Account string `json:"account" jsonschema:"the account"`
	Email   string `json:"email" jsonschema:"the correspondent's address"`
}

// ContactText is a contact's untrusted part.
type ContactText struct {
	Email    string   `json:"email"`
	Name     string   `json:"name"`
	Summary  string   `json:"summary" jsonschema:"the model's rolling summary of the exchanges (untrusted)"`
	Notes    []string `json:"notes"`
	Subjects []string `json:"recent_subjects"`
}

// ContactOut is one contact.
type ContactOut struct {
	Account   string      `json:"account"`
	Known     bool        `json:"known" jsonschema:"the owner has written to them"`
	FirstSeen time.Time   `json:"first_seen"`
	LastSeen  time.Time   `json:"last_seen"`
	Inbound   int         `json:"inbound"`
	Outbound  int         `json:"outbound"`
	Untrusted ContactText `json:"untrusted_external_content"`
}

func (s *server) contactShow(ctx context.Context, _ *mcp.CallToolRequest, in ContactIn) (*mcp.CallToolResult, ContactOut, error) {
	out := ContactOut{Untrusted: ContactText{Notes: []string{}, Subjects: []string{}}}
	err := checkID("account", in.Account)
	if err == nil {
		err = checkID("email", in.Email)
	}
	if err == nil && !s.allowed(in.Account) {
		err = errNotFound
	}
	if err != nil {
		return nil, out, err
	}
	err = s.with(ctx, func(svc api.Service) error {
		c, err := svc.Contact(ctx, in.Account, in.Email)
		if err != nil {
			return err
		}
		out.Account, out.Known, out.FirstSeen, out.LastSeen, out.Inbound, out.Outbound =
			line(in.Account), c.Known, c.FirstSeen, c.LastSeen, c.Inbound, c.Outbound
		out.Untrusted.Email, out.Untrusted.Name, out.Untrusted.Summary = line(c.Email), line(c.Name), text(c.Summary, maxBody)
		out.Untrusted.Notes = lines(c.Notes)
		h := c.History
		if len(h) > maxList {
			h = h[len(h)-maxList:]
		}
		for _, e := range h {
			out.Untrusted.Subjects = append(out.Untrusted.Subjects, line(e.Direction+": "+e.Subject))
		}
		return nil
	})
	return nil, out, err
}

// DecisionsIn selects what was decided without asking.
type DecisionsIn struct {
	Since   string `json:"since,omitempty" jsonschema:"from this date (2026-01-02 or RFC 3339); default the last 7 days"`
	Account string `json:"account,omitempty" jsonschema:"only this account"`
	Page
}

func (s *server) decisions(ctx context.Context, _ *mcp.CallToolRequest, in DecisionsIn) (*mcp.CallToolResult, MessagesOut, error) {
	out := MessagesOut{Messages: []Message{}}
	p, err := parsePage("decisions", fingerprint(in.Account, in.Since), in.Cursor, in.Limit)
	if err == nil {
		err = s.account(in.Account)
	}
	var since time.Time
	if err == nil {
		since, err = parseDate("since", in.Since)
	}
	if err != nil {
		return nil, out, err
	}
	if since.IsZero() {
		since = s.o.Now().Add(-7 * 24 * time.Hour)
	}
	req := api.DecidedWithoutAskingQuery(since)
	req.Account = in.Account
	return s.messagePage(ctx, p, in.Account, req)
}

// DigestIn picks the period.
type DigestIn struct {
	Since string `json:"since,omitempty" jsonschema:"from this date (2026-01-02 or RFC 3339); default the last 24 hours"`
}

// DigestItem is one line of the digest.
type DigestItem struct {
	Account   string    `json:"account"`
	ID        string    `json:"id" jsonschema:"a queue id or a message key"`
	At        time.Time `json:"at"`
	Untrusted MailText  `json:"untrusted_external_content"`
}

// DigestOut is the report of a period; each list holds at most 100 items.
type DigestOut struct {
	Since       time.Time      `json:"since"`
	Until       time.Time      `json:"until"`
	Processed   int            `json:"processed"`
	AutoSent    []DigestItem   `json:"auto_sent"`
	Scheduled   []DigestItem   `json:"scheduled"`
	Waiting     []DigestItem   `json:"waiting"`
	NeedsReview []DigestItem   `json:"needs_review"`
	Archived    map[string]int `json:"archived" jsonschema:"archived messages by category"`
	Ignored     map[string]int `json:"ignored" jsonschema:"ignored messages by category"`
	TokensIn    int64          `json:"tokens_in"`
	TokensOut   int64          `json:"tokens_out"`
	USD         float64        `json:"usd" jsonschema:"estimated cost (0 when the model's price is unknown)"`
}

func (s *server) digest(ctx context.Context, _ *mcp.CallToolRequest, in DigestIn) (*mcp.CallToolResult, DigestOut, error) {
	now := s.o.Now()
	out := DigestOut{AutoSent: []DigestItem{}, Scheduled: []DigestItem{}, Waiting: []DigestItem{}, NeedsReview: []DigestItem{},
		Archived: map[string]int{}, Ignored: map[string]int{}}
	since, err := parseDate("since", in.Since)
	if err != nil {
		return nil, out, err
	}
	if since.IsZero() {
		since = now.Add(-24 * time.Hour)
	}
	err = s.with(ctx, func(svc api.Service) error {
		rep, err := digest.Build(source{ctx: ctx, svc: svc, allowed: s.allowed}, since, now, s.o.Model)
		if err != nil {
			return err
		}
		out.Since, out.Until, out.Processed = rep.Since, rep.Until, rep.Processed
		out.TokensIn, out.TokensOut, out.USD = rep.Usage.TokensIn, rep.Usage.TokensOut, rep.USD
		for k, v := range rep.Archived {
			out.Archived[line(k)] = v
		}
		for k, v := range rep.Ignored {
			out.Ignored[line(k)] = v
		}
		for _, x := range first(rep.AutoSent) {
			out.AutoSent = append(out.AutoSent, DigestItem{Account: line(x.Account), At: x.SentAt, Untrusted: MailText{To: lines(x.To), Subject: line(x.Subject)}})
		}
		for _, x := range first(rep.Scheduled) {
			out.Scheduled = append(out.Scheduled, DigestItem{Account: line(x.Account), At: x.SentAt, Untrusted: MailText{To: lines(x.To), Subject: line(x.Subject)}})
		}
		for _, x := range first(rep.Waiting) {
			out.Waiting = append(out.Waiting, DigestItem{Account: line(x.Account), ID: line(x.ID), At: x.Since, Untrusted: MailText{From: addr(x.From), Subject: line(x.Subject)}})
		}
		for _, x := range first(rep.NeedsReview) {
			out.NeedsReview = append(out.NeedsReview, DigestItem{Account: line(x.Key.Account), ID: x.Key.String(),
				Untrusted: MailText{From: addr(x.From), Subject: line(x.Subject), Reasons: lines([]string{x.Error})}})
		}
		return nil
	})
	return nil, out, err
}

func first[T any](xs []T) []T { return xs[:min(len(xs), MaxLimit)] }

// source is digest.Source over any Service, limited to the accounts the
// client may see.
type source struct {
	ctx     context.Context
	svc     api.Service
	allowed func(string) bool
}

func (s source) ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error {
	return storeOf(s.ctx, s.svc).ListMessages(f, func(r *store.MessageRecord) error {
		if !s.allowed(r.Account) {
			return nil
		}
		return fn(r)
	})
}

func (s source) ListQueue(status string, fn func(*store.QueueItem) error) error {
	items, err := s.svc.Queue(s.ctx, api.QueueFilter{Status: status})
	if err != nil {
		return err
	}
	for i := range items {
		if s.allowed(items[i].Account) {
			if err := fn(&items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s source) ListOutbox(status string, fn func(*store.OutboxRecord) error) error {
	recs, err := s.svc.Outbox(s.ctx, status)
	if err != nil {
		return err
	}
	for i := range recs {
		if s.allowed(recs[i].Account) {
			if err := fn(&recs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// UsageRange reads the token ledger of the period's days from the store,
// through the watcher's socket when one runs: the same figures either way.
func (s source) UsageRange(from, to string) ([]store.UsageDay, error) {
	return api.UsageRange(s.ctx, s.svc, from, to)
}

// ProposeIn is a proposed reply.
type ProposeIn struct {
	Ref  string `json:"ref" jsonschema:"the message to answer: a thread id, a Message-ID, a trace id or a queue id"`
	Text string `json:"text" jsonschema:"the reply's text, plain text, no longer than the tool's description says; recipients are not yours to choose"`
}

// ProposeOut is the queued draft.
type ProposeOut struct {
	Item QueueItem `json:"item"`
	Note string    `json:"note"`
}

func (s *server) proposeReply(ctx context.Context, req *mcp.CallToolRequest, in ProposeIn) (*mcp.CallToolResult, ProposeOut, error) {
	var out ProposeOut
	if err := checkID("ref", in.Ref); err != nil {
		return nil, out, err
	}
	// A character is at most 4 bytes: a longer text has more characters
	// than propose takes, and is refused before the service is opened;
	// propose counts the characters of the rest.
	if strings.TrimSpace(in.Text) == "" || len(in.Text) > utf8.UTFMax*agent.MaxProposalChars {
		return nil, out, fmt.Errorf("%w: the text is empty or too long", ErrInvalid)
	}
	source := "unknown client"
	if req != nil && req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
			source = clip(line(ip.ClientInfo.Name), 64)
		}
	}
	err := s.with(ctx, func(svc api.Service) error {
		p, ok := svc.(api.Proposer)
		if !ok {
			return api.ErrNoActions
		}
		key, err := s.resolve(ctx, svc, in.Ref)
		if err != nil {
			return err
		}
		q, err := p.Propose(ctx, key, in.Text, source)
		if err != nil {
			return err
		}
		out.Item = queueItem(q, maxBody)
		out.Note = "queued as a pending draft for the owner's review in mailagent; nothing was sent"
		s.o.Logger.Info("mcp: reply proposed", "queue_id", q.ID, "client", source)
		return nil
	})
	return nil, out, err
}

// resolve finds the message a reference names, in an account the client
// may see, and only ever a message of one authenticated correspondent
// (store.ThreadCorrespondent, store.MayResolve): a client's id is text a
// stranger may have chosen or copied.
//   - A queue id: its item's own message.
//   - A thread id: the newest message of the thread's correspondent; a
//     stranger who joined the thread (by References or by subject) is
//     never chosen, and when the thread holds mail of more than one
//     authenticated correspondent the error names the trace ids to choose
//     from instead of guessing.
//   - A trace id: its message (mailagent's own id, nobody else's).
//   - A Message-ID: its message, unless another stored message carries
//     the same Message-ID from someone else (a borrowed id): then the
//     error names the trace ids to choose from.
func (s *server) resolve(ctx context.Context, svc api.Service, ref string) (store.MessageKey, error) {
	if d, err := svc.QueueItem(ctx, ref); err == nil {
		if !s.allowed(d.Item.Account) {
			return store.MessageKey{}, errNotFound
		}
		return d.Item.Message, nil
	} else if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, api.ErrBadRequest) {
		return store.MessageKey{}, err
	}
	if msgs, err := storeOf(ctx, svc).ThreadMessages(ref, 0); err == nil && len(msgs) > 0 {
		return s.threadMessage(msgs)
	}
	e, err := svc.Explain(ctx, ref)
	if err != nil {
		return store.MessageKey{}, err
	}
	if e.Trace == nil || !s.allowed(e.Trace.Message.Account) {
		return store.MessageKey{}, errNotFound
	}
	if e.Trace.TraceID == ref || e.Message == nil {
		return e.Trace.Message, nil
	}
	return s.messageIDMessage(ctx, svc, e.Message)
}

// threadMessage chooses, in a thread (oldest first), the newest message
// of the thread's correspondent.
func (s *server) threadMessage(msgs []*store.MessageRecord) (store.MessageKey, error) {
	var seen []*store.MessageRecord
	for _, m := range msgs {
		if s.allowed(m.Account) {
			seen = append(seen, m)
		}
	}
	if len(seen) == 0 {
		return store.MessageKey{}, errNotFound // another account's thread
	}
	anchor, who := store.ThreadCorrespondent(seen)
	var pick *store.MessageRecord
	var others []*store.MessageRecord
	for _, m := range seen {
		if m.FromOwner() || m.Correspondent() == "" {
			continue
		}
		if anchor != nil && store.MayResolve(m, anchor) {
			pick = m
		} else {
			others = append(others, m)
		}
	}
	switch {
	case len(others) > 0:
		return store.MessageKey{}, ambiguous("the thread holds mail from more than one authenticated correspondent", append(others, pick))
	case pick == nil:
		return store.MessageKey{}, fmt.Errorf("%w: the thread has no message from its authenticated correspondent %s to answer", ErrInvalid, clip(line(who), 80))
	}
	return pick.MessageKey, nil
}

// messageIDMessage returns rec, the message a Message-ID led to, unless
// another message of the account carries the same Message-ID and is not
// rec's correspondent's.
func (s *server) messageIDMessage(ctx context.Context, svc api.Service, rec *store.MessageRecord) (store.MessageKey, error) {
	k := mail.IDKey(rec.MessageID)
	var same []*store.MessageRecord
	err := storeOf(ctx, svc).ListMessages(store.MessageFilter{Account: rec.Account}, func(m *store.MessageRecord) error {
		if m.MessageKey != rec.MessageKey && mail.IDKey(m.MessageID) == k && (!store.MayResolve(m, rec) || !store.MayResolve(rec, m)) {
			same = append(same, m)
		}
		return nil
	})
	if err != nil {
		return store.MessageKey{}, err
	}
	if len(same) > 0 {
		return store.MessageKey{}, ambiguous("more than one correspondent's message carries this Message-ID", append(same, rec))
	}
	return rec.MessageKey, nil
}

// ambiguous is the error that names the messages a client must choose
// from, by trace id (mailagent's own ids, unlike Message-IDs).
func ambiguous(why string, msgs []*store.MessageRecord) error {
	var b strings.Builder
	for _, m := range msgs {
		if m == nil {
			continue
		}
		who := m.Correspondent()
		if who == "" {
			who = "unauthenticated"
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", m.TraceID, clip(line(who), 80))
	}
	return fmt.Errorf("%w: %s; pass the trace id of the message to answer: %s", ErrInvalid, why, b.String())
}
