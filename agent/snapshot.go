package agent

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mailagent/mailagent/agent/owner"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Redactor removes secrets from text before it is stored in a step
// snapshot (config.Redactor is the one the product wires).
type Redactor interface {
	Redact(s string) string
}

// newTracer starts the trace t with the pipeline's snapshot settings.
func (p *Pipeline) newTracer(t *store.Trace) *tracer {
	return &tracer{t: t, now: p.now, snapshots: p.Snapshots, redact: p.Redactor}
}

// snap returns the snapshot of one step: in and out are text as is, or
// anything else as JSON; both are redacted (secrets never reach the
// store) and capped (store.CapSnapshot). It is nil when snapshots are
// off. Without a Redactor nothing is stored: an unredacted snapshot could
// keep a credential. JSON is kept compact and marked as JSON, and the
// store indents it when it is read (store.LoadSnapshots): indenting every
// snapshot of every message cost triage a twentieth of its CPU.
func (tr *tracer) snap(in, out any) *store.StepSnapshot {
	if tr == nil || !tr.snapshots || tr.redact == nil {
		return nil
	}
	inText, inJSON := snapText(in)
	outText, outJSON := snapText(out)
	return &store.StepSnapshot{
		Input:  store.CapSnapshot(tr.redact.Redact(inText)),
		Output: store.CapSnapshot(tr.redact.Redact(outText)),

		InputJSON: inJSON, OutputJSON: outJSON,
	}
}

// snapText renders v for a snapshot, and reports whether it rendered
// JSON. Mail text keeps its bytes (the viewer sanitises it); values
// become compact JSON without HTML escaping.
func snapText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, false
	case error:
		return x.Error(), false
	}
	b := snapBufs.Get().(*bytes.Buffer)
	defer func() {
		if b.Cap() <= 64<<10 { // a rare huge one is not kept
			b.Reset()
			snapBufs.Put(b)
		}
	}()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "unrenderable: " + err.Error(), false
	}
	return string(bytes.TrimRight(b.Bytes(), "\n")), true
}

// snapBufs are snapText's buffers: every step of every message renders
// one, and growing a fresh buffer each time was a tenth of triage's
// allocation.
var snapBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// rawHeaders returns the header block of a raw message (up to the first
// empty line), which is what the parse step read.
func rawHeaders(raw []byte) string {
	for _, sep := range [][]byte{[]byte("\r\n\r\n"), []byte("\n\n")} {
		if i := bytes.Index(raw, sep); i >= 0 {
			return string(raw[:i])
		}
	}
	return string(raw)
}

// modelAnswer is a model step's output: the raw answer when the model
// client reported it, else what was decoded from it.
func modelAnswer(raw string, decoded any, err error) any {
	switch {
	case raw != "" && err != nil:
		return raw + "\n\nerror: " + err.Error()
	case raw != "":
		return raw
	case err != nil:
		return err
	}
	return decoded
}

// The snapshot values of the steps every message takes are structs, not
// maps: encoding/json renders a struct from a cached plan, where a map
// costs a sort and a reflection per key, on every message. Their fields
// are in the order of their JSON names, so they render exactly as the
// maps they replace did (TestSnapshotStructsRenderLikeMaps).

// parseOut is the parse step's output: what was read from the message,
// with its text by size only (the model steps show the text).
type parseOut struct {
	Attachments    []string  `json:"attachments"`
	CleanTextBytes int       `json:"clean_text_bytes"`
	ContentType    string    `json:"content_type"`
	Date           time.Time `json:"date"`
	Forwarded      bool      `json:"forwarded"`
	From           string    `json:"from"`
	MessageID      string    `json:"message_id"`
	Problems       []string  `json:"problems"`
	Subject        string    `json:"subject"`
	TextBytes      int       `json:"text_bytes"`
	To             string    `json:"to"`
	Truncated      bool      `json:"truncated"`
}

func parseSummary(m *mail.Message) parseOut {
	atts := make([]string, 0, len(m.Attachments))
	for _, a := range firstN(m.Attachments, maxListed) {
		atts = append(atts, a.Filename+" ("+a.ContentType+")")
	}
	return parseOut{
		MessageID: m.MessageID, From: formatAddress(m.From), To: formatAddresses(firstN(m.To, maxListed)),
		Subject: m.Subject, Date: m.Date, ContentType: m.ContentType,
		TextBytes: len(m.Text), CleanTextBytes: len(m.CleanText), Attachments: atts,
		Forwarded: m.Forwarded, Truncated: m.Truncated, Problems: m.Problems,
	}
}

// authIn is the authenticate step's input.
type authIn struct {
	AuthenticationResults []string `json:"authentication_results"`
	AuthservID            string   `json:"authserv_id"`
	From                  string   `json:"from"`
	FromSentFolder        bool     `json:"from_sent_folder"`
}

// routeHeaders are the header fields routing looks at.
var routeHeaders = []string{"Auto-Submitted", "Precedence", "List-Id", "List-Unsubscribe", "Return-Path",
	"X-Auto-Response-Suppress", "X-Autoreply", "X-Mailagent", "Feedback-Id"}

// routeIn is the route step's input.
type routeIn struct {
	From           string              `json:"from"`
	FromSentFolder bool                `json:"from_sent_folder"`
	Headers        map[string][]string `json:"headers"`
	InReplyTo      []string            `json:"in_reply_to"`
}

func routeInputs(m *mail.Message, fromSent bool) routeIn {
	h := map[string][]string{}
	for _, k := range routeHeaders {
		if v := m.Header[k]; len(v) > 0 {
			h[k] = firstN(v, maxListed)
		}
	}
	return routeIn{From: formatAddress(m.From), FromSentFolder: fromSent,
		InReplyTo: firstN(m.InReplyTo, maxListed), Headers: h}
}

// decideIn is the decide step's input when no gate ran (the gates'
// inputs replace it when they do).
type decideIn struct {
	Classification *store.Classification `json:"classification"`
	Route          RouteInfo             `json:"route"`
}

// decisionOut is the decide step's output.
type decisionOut struct {
	Decision string             `json:"decision"`
	Gates    []store.GateResult `json:"gates"`
	Reasons  []string           `json:"reasons"`
}

func decisionSnapshot(rec *store.MessageRecord) decisionOut {
	return decisionOut{Decision: rec.Decision, Reasons: rec.Reasons, Gates: rec.Gates}
}

// threadIn and threadOut are the thread step's input and output.
type threadIn struct {
	InReplyTo       []string `json:"in_reply_to"`
	MessageID       string   `json:"message_id"`
	References      []string `json:"references"`
	ReferencesCount int      `json:"references_count"`
	Subject         string   `json:"subject"`
}

type threadOut struct {
	LinkedParents    []string `json:"linked_parents"`
	MergedThreads    []string `json:"merged_threads"`
	MessagesInThread int      `json:"messages_in_thread"`
	OtherMessageIDs  []string `json:"other_message_ids"`
	ThreadID         string   `json:"thread_id"`
	Why              string   `json:"why"`
}

// on reports whether snapshots are kept, so that a step computes what
// only its snapshot shows just when one will be stored.
func (tr *tracer) on() bool { return tr != nil && tr.snapshots && tr.redact != nil }

// threadSnapshot is the thread step's input and output: the message's
// ids and subject, and what the Threader joined it to and why. It names
// other messages by Message-ID only, never by their text.
func threadSnapshot(in mail.ThreadInput, th *mail.Threader, threadID string, merged []string) (threadIn, threadOut) {
	refs := in.References
	if n := len(refs); n > maxListed {
		refs = refs[n-maxListed:] // the nearest parents
	}
	input := threadIn{MessageID: in.MessageID, InReplyTo: firstN(in.InReplyTo, maxListed),
		References: refs, ReferencesCount: len(in.References), Subject: in.Subject}
	chain, how := mail.ParentIDs(in) // the parent chain as the Threader reads it
	var linked []string
	for _, id := range chain {
		if mail.IDKey(id) != mail.IDKey(in.MessageID) && th.ThreadID(id) != "" && len(linked) < maxListed {
			linked = append(linked, id) // a parent the Threader holds as a message
		}
	}
	members, total := th.Members(in.MessageID, maxListed+1)
	others := make([]string, 0, len(members))
	for _, id := range members {
		if mail.IDKey(id) != mail.IDKey(in.MessageID) && len(others) < maxListed {
			others = append(others, id)
		}
	}
	var why string
	switch {
	case len(chain) > 0 && len(linked) > 0:
		why = "joined by " + how + " to messages already seen"
	case len(chain) > 0 && total > 1:
		why = "joined by " + how + " through a parent not seen (yet) as a message"
	case len(chain) > 0:
		why = "new thread: its " + how + " names no message seen"
	case total > 1:
		why = "joined by subject: no References or In-Reply-To, same base subject as another thread root"
	default:
		why = "new thread: no References or In-Reply-To, and no other root with its subject"
	}
	output := threadOut{ThreadID: threadID, Why: why, LinkedParents: linked,
		MergedThreads: merged, MessagesInThread: total, OtherMessageIDs: others}
	return input, output
}

// ownerSnapshot is the owner step's snapshot: the prompt variables of each
// loop in, every turn and what it led to out. Each loop's text and each
// turn's answer and draft get an equal share of the cap, so that a long
// answer cannot push the later turns (or the refusal) out of it.
func ownerSnapshot(res owner.Result) (in, out any) {
	loops := slices.Clone(res.Loops)
	share := (store.SnapshotCap - 1024) / max(len(loops), 1)
	for i := range loops {
		loops[i].Text = capText(loops[i].Text, share)
	}
	turns := slices.Clone(res.Turns)
	share = (store.SnapshotCap - 1024) / max(2*len(turns), 1)
	for i := range turns {
		turns[i].Answer = capText(turns[i].Answer, share)
		turns[i].Draft = capText(turns[i].Draft, share)
		turns[i].Result = capText(turns[i].Result, share)
	}
	recorded := make([]string, 0, len(res.Recorded))
	for _, l := range res.Recorded {
		recorded = append(recorded, l.ID+": "+l.Text)
	}
	if len(loops) == 1 {
		in = loops[0]
	} else {
		in = loops
	}
	return in, map[string]any{"turns": turns, "recorded": recorded, "queued": res.QueueIDs, "refused": res.Rejected}
}

// capText cuts s to at most n bytes at a rune boundary, marking the cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	marker := "…[cut " + strconv.Itoa(len(s)) + " bytes]"
	cut := max(n-len(marker), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}

// answeredInput is the answered step's input: where the evidence was
// looked for.
func (p *Pipeline) answeredInput(rec *store.MessageRecord) map[string]any {
	checked := []string{"outbox: another reply to this Message-ID, sent or under way"}
	if p.Actor != nil && p.Actor.Mailer != nil {
		checked = append(checked, "Sent folder: a message naming it in In-Reply-To or References",
			`the original in `+rec.Mailbox+`: \Answered`)
	}
	return map[string]any{"message_id": rec.MessageID, "mailbox": rec.Mailbox, "uid": rec.UID,
		"uidvalidity": rec.UIDValidity, "checked": checked}
}

// answeredOutput is the answered step's output: the evidence found (the
// reply's outbox id, or the Sent message's Message-ID, or the flag and its
// folder), or that there was none.
func answeredOutput(found bool, reason string, err error) map[string]any {
	out := map[string]any{"answered": found}
	switch {
	case err != nil:
		out["error"] = err.Error()
	case found:
		out["evidence"] = reason
	default:
		out["evidence"] = "none found: the message is drafted"
	}
	return out
}

// resumeSnapshot is the resume step's snapshot: what a restart found of
// the message (its journaled state, the steps already traced, any queue
// item or outbox record already made for it) and what it resumes.
func (p *Pipeline) resumeSnapshot(rec *store.MessageRecord, steps []store.Step) (in, out map[string]any) {
	names := make([]string, 0, len(steps))
	for _, s := range steps {
		names = append(names, s.Name)
	}
	in = map[string]any{"state": rec.State, "decision": rec.Decision, "route": rec.Route, "attempts": rec.Attempts,
		"traced_steps": names}
	if p.Actor != nil && p.Actor.Store != nil {
		if q, err := p.Actor.Store.GetQueueItem(QueueID(rec.MessageKey)); err == nil {
			in["queue_item"] = q.ID + " (" + q.Status + ")"
		}
		if ob, err := p.Actor.Store.GetOutbox(OutboxID(rec.MessageKey)); err == nil && ob != nil {
			in["outbox"] = ob.ID + " (" + ob.Status + ")"
		}
	}
	out = map[string]any{"not_run_again": "parse, thread, authenticate, route, classify, decide"}
	switch rec.State {
	case store.StateDecided:
		out["resumes"] = "acting on decision " + rec.Decision + " (a queue item or outbox record already made is not made again)"
	case store.StateActed:
		out["resumes"] = "recording the message as done: it was acted on before the restart"
	default:
		out["resumes"] = "state " + string(rec.State)
	}
	return in, out
}

// mailboxSnapshot is the mailbox step's snapshot: which message the
// decision applies to and what was asked, in; what changed, out.
func mailboxSnapshot(rec *store.MessageRecord, keywords, did []string, err error) (in, out map[string]any) {
	in = map[string]any{"decision": rec.Decision, "message_id": rec.MessageID, "mailbox": rec.Mailbox,
		"uid": rec.UID, "uidvalidity": rec.UIDValidity, "keywords_wanted": keywords}
	out = map[string]any{"done": did}
	if err != nil {
		out["error"] = err.Error()
	}
	return in, out
}
