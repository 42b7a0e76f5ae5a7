package owner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// Channel runs the owner's channel for one pipeline: it sorts an owner
// message (Mode) and runs its bounded tool loop (Run). agent builds one
// per message from its pipeline.
type Channel struct {
	// Model answers each turn; Prompts renders it.
	Model   llm.Model
	Prompts *prompts.Set
	// MaxSteps bounds the loop (DefaultSteps when 0).
	MaxSteps int
	// MaxBody caps the message text the model reads.
	MaxBody int
	// Store reads the thread an owner message replies to.
	Store Store
	// Memory keeps what update_context records.
	Memory Memory
	// Accounts answers which addresses are the owner's and the agent's.
	Accounts Accounts
	// Host drafts and queues a delegated reply (agent.Pipeline).
	Host Host
	// Line is how a recorded memory reads in the confirmation; nil: its
	// text.
	Line func(store.MemoryRecord) string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Store is what the channel reads of the store.
type Store interface {
	ThreadMessages(threadID string, limit int) ([]*store.MessageRecord, error)
}

// Memory is where update_context writes (*store.Store implements it).
type Memory interface {
	AddMemory(r *store.MemoryRecord) (*store.MemoryRecord, error)
}

// Accounts is what the channel needs to know of the accounts
// (agent.Accounts implements it).
type Accounts interface {
	// IsOwner reports whether addr is one of the owner's addresses.
	IsOwner(account, addr string) bool
	// IsAgentAddress reports whether addr is the agent's own address
	// (accounts.assistant_address, or an owner address's +agent).
	IsAgentAddress(account, addr string) bool
}

// Host is what a delegation needs from the pipeline: the drafter and
// the queue. Neither sends anything; the queued draft waits for the
// owner's approval whatever its gates say.
type Host interface {
	// Owner is the owner as the prompts name them.
	Owner(account string) prompts.Owner
	// Draft drafts the reply to the forwarded original fw, with the
	// owner's instruction ("" = the owner's note above the forward).
	Draft(ctx context.Context, rec *store.MessageRecord, fw Forwarded, instruction string) (string, llm.Usage, error)
	// Queue records fw as a message of its own and queues body as the
	// reply to its sender, for the owner's approval; it returns the
	// queue id.
	Queue(ctx context.Context, rec *store.MessageRecord, fw Forwarded, body string) (string, error)
}

func (c *Channel) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Channel) line(r store.MemoryRecord) string {
	if c.Line != nil {
		return c.Line(r)
	}
	return r.Text
}

// refusal is code's veto of a turn, returned to GenerateJSON's
// validation so the model is asked once more.
type refusal struct{ why string }

func (r *refusal) Error() string { return "refused: " + r.why }

// maxText bounds a memory record's text in the turn schema.
var maxText = int64(store.MaxMemoryText)

// Turn is one turn of the owner loop in the owner step's snapshot: the
// model's raw answer (the tool call), and what code made of it (the
// result, or why it was refused).
type Turn struct {
	Loop   int    `json:"loop,omitempty"` // delegate: which forwarded original (1-based)
	Turn   int    `json:"turn"`
	Answer string `json:"answer"`
	Result string `json:"result"`
	// Draft is the reply generate_reply_draft wrote.
	Draft string `json:"draft,omitempty"`
}

// LoopInput is the prompt variables of one owner loop (the per-turn
// boundary and the earlier steps left out: the turns show those).
type LoopInput struct {
	Mode      string   `json:"mode"`
	Owner     string   `json:"owner"`
	Today     string   `json:"today"`
	Contacts  []string `json:"contacts"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Subject   string   `json:"subject"`
	Text      string   `json:"text"`
	Forwarded string   `json:"forwarded_from,omitempty"`
	MaxSteps  int      `json:"max_steps"`
}

func formatAddress(a mail.Address) string {
	if a.Name == "" {
		return a.Email
	}
	return a.Name + " <" + a.Email + ">"
}

func formatAddresses(as []mail.Address) string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, formatAddress(a))
	}
	return strings.Join(out, ", ")
}

// DefaultSteps is the hard step limit of the owner loop.
const DefaultSteps = 6

// Owner-loop tools.
const (
	ToolUpdateContext = "update_context"
	ToolGenerateDraft = "generate_reply_draft"
	ToolProposeSend   = "propose_send"
	ToolDone          = "done"
)

// DelegatedMailbox is the mailbox name of the records mailagent makes for
// the original of a delegated (forwarded) message: they are not in any
// real mailbox.
const DelegatedMailbox = "mailagent:delegated"

// ownerTurn is one tool call of the owner loop.
type ownerTurn struct {
	Tool        *string `json:"tool"`
	Kind        string  `json:"kind"`
	Contact     string  `json:"contact"`
	Text        string  `json:"text"`
	Expires     string  `json:"expires"`
	Instruction string  `json:"instruction"`
}

// TurnSchema is the ResponseSchema of one owner-loop turn.
func TurnSchema() *llm.Schema {
	str := func(desc string) *llm.Schema { return &llm.Schema{Type: "string", Description: desc} }
	return &llm.Schema{Type: "object",
		Properties: map[string]*llm.Schema{
			"tool":        {Type: "string", Enum: []string{ToolUpdateContext, ToolGenerateDraft, ToolProposeSend, ToolDone}},
			"kind":        {Type: "string", Enum: []string{"", store.MemoryFact, store.MemoryPreference, store.MemoryRule, store.MemoryStyle, store.MemoryTemporary}},
			"contact":     str("an address from the list, @domain, or empty"),
			"text":        {Type: "string", MaxLength: &maxText},
			"expires":     str("YYYY-MM-DD for a temporary record, else empty"),
			"instruction": str("for generate_reply_draft: what the reply should say"),
		},
		Required:         []string{"tool", "kind", "contact", "text", "expires", "instruction"},
		PropertyOrdering: []string{"tool", "kind", "contact", "text", "expires", "instruction"},
	}
}

// Result is what one owner message led to.
type Result struct {
	Mode     string
	Recorded []store.Learned
	// QueueID is the delegated draft's queue item ("" when none); with a
	// forward of several threads, the first of QueueIDs.
	QueueID  string
	QueueIDs []string
	// Steps are the loop's calls, as shown to the model; Rejected counts
	// calls that code refused (a contact not offered, a tool outside the
	// mode, …).
	Steps    []string
	Rejected int
	// Usage is the tokens of every model call of the loop.
	Usage llm.Usage

	// Loops and Turns are the prompt variables of each loop and every
	// turn, for the owner step's snapshot (agent's snapshot.go).
	Loops []LoopInput
	Turns []Turn
}

// Run runs the bounded tool loop for one owner message: at most
// MaxSteps model turns, each a tool call that checkTurn vetoes or allows;
// a delegation (fw is its forwarded original) ends with a queued draft.
func (c *Channel) Run(ctx context.Context, rec *store.MessageRecord, body, mode string, contacts []string, fw Forwarded) (Result, error) {
	res := Result{Mode: mode}
	steps := c.MaxSteps
	if steps <= 0 {
		steps = DefaultSteps
	}
	now := c.now()
	data := prompts.OwnerData{Owner: c.Host.Owner(rec.Account), Mode: mode, Today: now.Format("2006-01-02"), Contacts: contacts,
		From: formatAddress(rec.From), To: formatAddresses(append(slices.Clone(rec.To), rec.Cc...)), Subject: rec.Subject,
		Text: prompts.TrimText(loopText(body, fw), c.MaxBody)}
	res.Loops = []LoopInput{{Mode: mode, Owner: formatAddress(mail.Address{Name: data.Owner.Name, Email: data.Owner.Email}), Today: data.Today,
		Contacts: contacts, From: data.From, To: data.To, Subject: data.Subject, Text: data.Text, MaxSteps: steps}}
	if fw.From.Email != "" {
		res.Loops[0].Forwarded = formatAddress(fw.From)
	}
	var draft *string
	// record keeps the model's answer of this turn and what came of it.
	record := func(answer, result, drafted string) {
		res.Turns = append(res.Turns, Turn{Turn: len(res.Turns) + 1, Answer: answer, Result: result, Draft: drafted})
	}
	for range steps {
		data.Boundary, data.Steps = prompts.NewBoundary(), res.Steps
		system, user, err := c.Prompts.OwnerTurn(data)
		if err != nil {
			return res, fmt.Errorf("render owner prompt: %w", err)
		}
		refused := ""
		turn, info, err := llm.GenerateJSON(ctx, c.Model, llm.Request{System: system, Prompt: user, Schema: TurnSchema()}, func(t *ownerTurn) error {
			if vetoOffForTest.Load() {
				return nil
			}
			if why := checkTurn(t, mode, contacts, draft != nil, now); why != "" {
				refused = why
				return &refusal{why}
			}
			return nil
		})
		res.Usage = res.Usage.Add(info.Usage)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			var ve *refusal
			if refused != "" && errors.As(err, &ve) {
				// The model insisted on something code does not allow:
				// the loop stops; nothing of it was done.
				res.Rejected++
				res.Steps = append(res.Steps, "refused: "+refused)
				record(info.Raw, "refused: "+refused, "")
				break
			}
			record(info.Raw, "error: "+err.Error(), "")
			return res, fmt.Errorf("owner loop: %w", err)
		}
		// checkTurn refuses these; Run must not depend on it to stay
		// whole (nothing panics on a model's answer).
		if why := unrunnable(turn, draft != nil); why != "" {
			res.Rejected++
			res.Steps = append(res.Steps, "refused: "+why)
			record(info.Raw, "refused: "+why, "")
			break
		}
		switch *turn.Tool {
		case ToolDone:
			res.Steps = append(res.Steps, "done")
			record(info.Raw, "done", "")
			return c.finishDelegate(ctx, rec, fw, draft, res)
		case ToolUpdateContext:
			r := &store.MemoryRecord{Account: rec.Account, Kind: turn.Kind, Contact: turn.Contact, Text: turn.Text,
				Source: store.SourceMail + rec.MessageID}
			if turn.Kind == store.MemoryTemporary {
				day, _ := time.Parse("2006-01-02", turn.Expires)
				r.Expires = day.AddDate(0, 0, 1)
			}
			saved, err := c.Memory.AddMemory(r)
			if err != nil {
				res.Rejected++
				res.Steps = append(res.Steps, "update_context refused: "+err.Error())
				record(info.Raw, res.Steps[len(res.Steps)-1], "")
				continue
			}
			res.Recorded = append(res.Recorded, store.Learned{ID: saved.ID, Text: c.line(*saved)})
			res.Steps = append(res.Steps, "update_context: recorded "+saved.ID)
			record(info.Raw, res.Steps[len(res.Steps)-1], "")
		case ToolGenerateDraft:
			d, u, err := c.Host.Draft(ctx, rec, fw, turn.Instruction)
			res.Usage = res.Usage.Add(u)
			if err != nil {
				record(info.Raw, "generate_reply_draft failed: "+err.Error(), "")
				return res, err
			}
			draft = &d
			res.Steps = append(res.Steps, fmt.Sprintf("generate_reply_draft: drafted %d characters", len(d)))
			record(info.Raw, res.Steps[len(res.Steps)-1], d)
		case ToolProposeSend:
			qid, err := c.Host.Queue(ctx, rec, fw, *draft)
			if err != nil {
				record(info.Raw, "propose_send failed: "+err.Error(), "")
				return res, err
			}
			res.QueueID = qid
			res.Steps = append(res.Steps, "propose_send: queued "+qid+" for the owner's approval")
			record(info.Raw, res.Steps[len(res.Steps)-1], "")
		}
	}
	return c.finishDelegate(ctx, rec, fw, draft, res)
}

// finishDelegate makes sure a delegation ends with a queued draft: the
// owner asked for one, and queueing sends nothing.
func (c *Channel) finishDelegate(ctx context.Context, rec *store.MessageRecord, fw Forwarded, draft *string, res Result) (Result, error) {
	if res.Mode != prompts.ModeDelegate || res.QueueID != "" {
		return res, nil
	}
	drafted := ""
	if draft == nil {
		d, u, err := c.Host.Draft(ctx, rec, fw, "")
		res.Usage = res.Usage.Add(u)
		if err != nil {
			return res, err
		}
		draft, drafted = &d, d
	}
	qid, err := c.Host.Queue(ctx, rec, fw, *draft)
	res.QueueID = qid
	// Not a model turn: code finishing what the owner asked for.
	result := "code: the loop ended without propose_send; queued " + qid + " for the owner's approval"
	if err != nil {
		result = "code: queueing the delegated draft failed: " + err.Error()
	}
	res.Turns = append(res.Turns, Turn{Turn: len(res.Turns) + 1, Result: result, Draft: drafted})
	return res, err
}

// vetoOffForTest, set only by the positive control of the veto's
// adversarial test (never in parallel, restored before it returns),
// makes Run skip checkTurn. No product code sets it.
var vetoOffForTest atomic.Bool

// checkTurn is code's veto on one tool call; "" allows it.
func checkTurn(t *ownerTurn, mode string, contacts []string, haveDraft bool, now time.Time) string {
	if t.Tool == nil {
		return "tool: required"
	}
	switch *t.Tool {
	case ToolDone:
		return ""
	case ToolGenerateDraft:
		if mode != prompts.ModeDelegate {
			return "generate_reply_draft is only for a forwarded message"
		}
		return ""
	case ToolProposeSend:
		switch {
		case mode != prompts.ModeDelegate:
			return "propose_send is only for a forwarded message; nothing is sent from " + mode + " mail"
		case !haveDraft:
			return "propose_send needs generate_reply_draft first"
		}
		return ""
	case ToolUpdateContext:
		if mode == prompts.ModeDelegate {
			// The forwarded text is a stranger's: nothing is learned from it.
			return "update_context is not available for a forwarded message"
		}
	default:
		return fmt.Sprintf("unknown tool %q", *t.Tool)
	}
	c := mail.AddrKey(t.Contact)
	t.Contact = c
	switch {
	case !slices.Contains([]string{store.MemoryFact, store.MemoryPreference, store.MemoryRule, store.MemoryStyle, store.MemoryTemporary}, t.Kind):
		return fmt.Sprintf("kind %q is not a memory kind", t.Kind)
	case strings.TrimSpace(t.Text) == "":
		return "text: empty"
	case t.Kind == store.MemoryStyle && c != "":
		return "a style record is global: contact must be empty"
	case mode == prompts.ModeInstruction && (c == "" || slices.Contains(contacts, c) || validDomain(c)):
	case mode != prompts.ModeInstruction && slices.Contains(contacts, c):
	default:
		return fmt.Sprintf("contact %q is not one this mail may name (%s)", c, strings.Join(contacts, ", "))
	}
	if t.Kind == store.MemoryTemporary {
		day, err := time.Parse("2006-01-02", strings.TrimSpace(t.Expires))
		if err != nil {
			return "expires: a temporary record needs YYYY-MM-DD"
		}
		if !day.AddDate(0, 0, 1).After(now) {
			return "expires: the date has passed"
		}
		t.Expires = day.Format("2006-01-02")
	}
	return ""
}

var domainPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@[a-z0-9\-]+(\.[a-z0-9\-]+)+$`) })

func validDomain(c string) bool { return domainPattern().MatchString(c) }

// unrunnable says why Run cannot carry out turn at all ("" when it can):
// no tool named, or a send proposed before any draft exists.
func unrunnable(turn ownerTurn, drafted bool) string {
	switch {
	case turn.Tool == nil:
		return "a turn that names no tool"
	case *turn.Tool == ToolProposeSend && !drafted:
		return "propose_send before a draft"
	}
	return ""
}
