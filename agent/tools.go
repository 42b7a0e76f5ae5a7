package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// The tool step runs between classification and drafting. Code, never the
// model, picks which tools run (toolTable, from the validated intents) and
// builds their arguments (ToolInput, from the message). A tool only reads:
// none sends mail, picks recipients or writes memory. Every call has a
// timeout and a result size cap, is recorded in the trace as a "tool:NAME"
// step, and a failing tool never stops the message: the draft is written
// without it.

// ToolInput is everything a tool may know about the message, filled in by
// code. Sender is the authenticated sender ("" when unauthenticated).
type ToolInput struct {
	Account   string
	Sender    string
	Subject   string
	ThreadID  string
	MessageID string
	Intents   []string
}

// Tool is one read-only lookup. Run must return when ctx is done.
type Tool interface {
	Name() string
	Run(ctx context.Context, in ToolInput) (string, error)
}

// ToolCall is the record of one tool run.
type ToolCall struct {
	Name      string
	Duration  time.Duration
	Bytes     int  // the result's size before the cap
	Truncated bool // the result was cut at the cap
	Text      string
	Err       error
}

// Defaults of the tool step.
const (
	DefaultToolTimeout  = 10 * time.Second
	DefaultToolMaxBytes = 4096
	// DefaultToolBudgetTokens caps all external tool results in one draft
	// prompt (about 4 characters a token).
	DefaultToolBudgetTokens = 1000
)

// ToolStep runs the tools code picked, each bounded.
type ToolStep struct {
	Timeout      time.Duration // per call (default 10s)
	MaxBytes     int           // per result (default 4096)
	BudgetTokens int           // all external results together (default 1000)
	// External are the optional MCP tools (mcptools.go), run for every
	// reply of an authenticated sender; their text reaches the drafter
	// fenced as untrusted.
	External []Tool
}

// Built-in tool names.
const (
	ToolCalendar = "calendar"
	ToolThread   = "thread"
	ToolContact  = "contact"
)

// toolTable is the code's choice of built-in tools per intent; "*" is
// every reply.
var toolTable = []struct {
	intent string
	tools  []string
}{
	{"scheduling", []string{ToolCalendar}},
	{"*", []string{ToolThread, ToolContact}},
}

// PickTools returns the built-in tools that run for a reply with these
// intents, from toolTable alone.
func PickTools(intents []string) []string {
	var out []string
	for _, row := range toolTable {
		if row.intent == "*" || slices.Contains(intents, row.intent) {
			for _, t := range row.tools {
				if !slices.Contains(out, t) {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

func (s *ToolStep) timeout() time.Duration {
	if s != nil && s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultToolTimeout
}

func (s *ToolStep) maxBytes() int {
	if s != nil && s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultToolMaxBytes
}

func (s *ToolStep) budgetChars() int {
	if s != nil && s.BudgetTokens > 0 {
		return s.BudgetTokens * 4
	}
	return DefaultToolBudgetTokens * 4
}

// errToolTimeout is a call that did not return within its timeout.
var errToolTimeout = errors.New("timed out")

// call runs t with the step's timeout and caps its result. A tool that
// ignores ctx is abandoned at the timeout; its late answer is dropped.
func (s *ToolStep) call(ctx context.Context, t Tool, in ToolInput) ToolCall {
	c := ToolCall{Name: t.Name()}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	type answer struct {
		text string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- answer{err: fmt.Errorf("tool %s panicked: %v", t.Name(), r)}
			}
		}()
		text, err := t.Run(cctx, in)
		ch <- answer{text, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-cctx.Done():
		a.err = fmt.Errorf("tool %s: %w after %s", t.Name(), errToolTimeout, s.timeout())
	}
	c.Duration = time.Since(start)
	if a.err == nil && cctx.Err() != nil {
		a.err = fmt.Errorf("tool %s: %w after %s", t.Name(), errToolTimeout, s.timeout())
	}
	if a.err != nil {
		c.Err = a.err
		return c
	}
	c.Bytes = len(a.text)
	c.Text, c.Truncated = CleanToolText(a.text, s.maxBytes())
	if toolTextRawOff.Load() {
		c.Text, c.Truncated = a.text, false
	}
	return c
}

// toolTextRawOff switches CleanToolText off for tool results: the model
// gets a tool's answer as the tool wrote it. It exists only for the
// positive control of the tool-result attacks; nothing in the product
// sets it. Never from a parallel test.
var toolTextRawOff atomic.Bool

// CleanToolText makes a tool's answer safe to show the model the way mail
// text is (internal/termsafe, the sanitiser of mail shown to MCP clients
// and the terminal): no control characters but newlines and tabs, no
// escape sequence (removed whole), no bidi or zero-width characters,
// valid UTF-8; then at most max bytes, cut on a rune boundary with a
// visible marker. The prompt renderer removes the fence boundary from it
// like from every untrusted field.
func CleanToolText(s string, max int) (string, bool) {
	s = termsafe.Text(s)
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " \t\n") + fmt.Sprintf("\n[… cut at %d bytes]", max), true
}

// recordTool adds c to the trace as a "tool:NAME" step, with its snapshot:
// the input code built and the (cleaned, capped) result or error.
func (tr *tracer) recordTool(c ToolCall, in ToolInput) {
	done := tr.step("tool:" + c.Name)
	detail := fmt.Sprintf("%d bytes in %s", c.Bytes, c.Duration.Round(time.Millisecond))
	if c.Truncated {
		detail += ", cut to the size cap"
	}
	var out any = c.Text
	if c.Err != nil {
		out = c.Err
	}
	s := store.Step{Detail: detail, LatencyMS: c.Duration.Milliseconds(), Snapshot: tr.snap(in, out)}
	done(s, c.Err)
}

// builtinTool is a tool whose answer reaches the drafter through its own
// prompt section (the calendar's slots, the thread, the contact's record);
// apply hands it over, and is called only when the call returned in time,
// so a late answer never touches the request.
type builtinTool struct {
	name  string
	run   func(ctx context.Context) (string, error)
	apply func()
}

func (b *builtinTool) Name() string                                         { return b.name }
func (b *builtinTool) Run(ctx context.Context, _ ToolInput) (string, error) { return b.run(ctx) }

// runTools is the tool step of one reply: it runs the built-in tools
// PickTools names for the intents, then the external ones, records each
// call, and fills req (the thread, the contact, the free slots and the
// fenced tool results within the token budget). It returns what the
// calendar offered, for the schedule gate.
func (p *Pipeline) runTools(ctx context.Context, rec *store.MessageRecord, req *DraftRequest, tr *tracer) *offeredSlots {
	var offered *offeredSlots
	in := ToolInput{Account: rec.Account, Sender: rec.SenderAuth.Identity(), Subject: rec.Subject,
		ThreadID: rec.ThreadID, MessageID: rec.MessageID, Intents: slices.Clone(req.Intents)}
	var tools []Tool
	for _, name := range PickTools(req.Intents) {
		switch name {
		case ToolCalendar:
			if p.Calendar == nil {
				// Nothing to ask: the schedule gate still has to know that no
				// calendar was consulted, and fails the reply.
				offered = p.offerSlots(ctx, rec, req)
				continue
			}
			var o *offeredSlots
			r := *req
			tools = append(tools, &builtinTool{name: name,
				run: func(ctx context.Context) (string, error) {
					o = p.offerSlots(ctx, rec, &r)
					if o != nil && o.err != nil {
						return "", o.err
					}
					if o != nil && o.note != "" {
						return o.note + "\n" + r.FreeSlots, nil // the note is for the trace only
					}
					return r.FreeSlots, nil
				},
				apply: func() { offered, req.FreeSlots = o, r.FreeSlots }})
		case ToolThread:
			var th []prompts.ThreadMessage
			tools = append(tools, &builtinTool{name: name,
				run: func(context.Context) (string, error) {
					th = p.threadContext(rec)
					return fmt.Sprintf("%d earlier messages in thread %s", len(th), rec.ThreadID), nil
				},
				apply: func() { req.Thread = th }})
		case ToolContact:
			var c *store.Contact
			tools = append(tools, &builtinTool{name: name,
				run: func(context.Context) (string, error) {
					if c = p.contactFor(rec); c == nil {
						return "", nil
					}
					return c.Summary, nil
				},
				apply: func() { req.Contact = c }})
		}
	}
	// External tools see only an authenticated sender's mail: anyone can
	// write a known contact's address in From.
	if in.Sender != "" {
		tools = append(tools, p.Tools.external()...)
	}
	budget := p.Tools.budgetChars()
	for _, t := range tools {
		c := p.Tools.call(ctx, t, in)
		tr.recordTool(c, in)
		if c.Err != nil {
			p.logger().Warn("tool failed; drafting without it", "tool", c.Name, "err", c.Err)
			if b, ok := t.(*builtinTool); ok && c.Name == ToolCalendar && !errors.Is(c.Err, errToolTimeout) {
				b.apply() // the schedule gate must see the calendar's error
			} else if c.Name == ToolCalendar && p.Calendar != nil {
				offered = &offeredSlots{ref: p.now(), err: c.Err}
			}
			continue
		}
		if b, ok := t.(*builtinTool); ok {
			b.apply()
			continue
		}
		if c.Text == "" || budget <= 0 {
			continue
		}
		text := c.Text
		if n := utf8.RuneCountInString(text); n > budget {
			text = prompts.TrimText(text, budget)
		}
		budget -= utf8.RuneCountInString(text)
		req.Tools = append(req.Tools, prompts.ToolResult{Name: c.Name, Text: text})
	}
	return offered
}

func (s *ToolStep) external() []Tool {
	if s == nil {
		return nil
	}
	return s.External
}
