package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/llm"
)

// Label is how the demo names its model to the user, everywhere it shows a
// model name. It must never be mistaken for AI output.
const Label = "offline demo model (rule-based, no AI)"

// ModelName is reported in Response.Model.
const ModelName = "offline-demo"

// ErrUnsupported is returned for a request whose schema Model does not
// recognise (no "intents", "body" or "summary" property).
var ErrUnsupported = errors.New("offline demo model: unsupported request")

// Model is a deterministic, keyword-based stand-in for the language model.
// It recognises the request by its schema: a property "intents" asks for a
// classification, "body" for a reply draft, "summary" alone for a contact
// summary. It reads the email from the last fenced data block of the
// prompt (<<<MAILAGENT-DATA-… … MAILAGENT-DATA-…>>>). It is safe for
// concurrent use; the zero value signs drafts as OwnerName.
type Model struct {
	// OwnerName signs drafts (first name only); empty means OwnerName.
	OwnerName string
}

// NewModel returns the demo model for Ada.
func NewModel() *Model { return &Model{OwnerName: OwnerName} }

var _ llm.Model = (*Model)(nil)

// Generate answers one request. It fails only when ctx has ended or the
// request is not one it knows.
func (m *Model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	msg := extractMessage(req.Prompt)
	var out any
	switch s := req.Schema; {
	case s == nil:
		// Plain text is only asked for the contact summary.
		out = contactSummary(req.Prompt, nil)
	case s.Properties["intents"] != nil:
		out = classificationJSON(analyse(msg), msg, s)
	case s.Properties["body"] != nil:
		out = draftJSON(analyse(msg), msg, freeSlots(req.Prompt), m.signature(), s)
	case s.Properties["summary"] != nil:
		out = fillSchema(map[string]any{"summary": contactSummary(req.Prompt, s.Properties["summary"])}, s)
	default:
		return nil, fmt.Errorf("%w (schema properties %s)", ErrUnsupported, strings.Join(sortedKeys(s.Properties), ", "))
	}
	text, ok := out.(string)
	if !ok {
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("offline demo model: encode: %w", err)
		}
		text = string(b)
	}
	in := int32((len(req.System) + len(req.Prompt)) / 4)
	o := int32(len(text) / 4)
	return &llm.Response{Text: text, Model: ModelName, Usage: llm.Usage{PromptTokens: in, OutputTokens: o, TotalTokens: in + o}}, nil
}

func (m *Model) signature() string {
	name := m.OwnerName
	if name == "" {
		name = OwnerName
	}
	return firstName(name)
}

// ---- reading the prompt ----

// message is what the model could make out of the prompt.
type message struct {
	from    string // display name or address, as found; untrusted
	subject string
	body    string
}

var (
	openFence  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*<<<\s*(MAILAGENT-DATA-\S+?)\s*$`) })
	headerLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(from|to|cc|reply-to|sender|subject|date|attachments|route):\s*(.*)$`)
	})
)

type block struct {
	label string // the unfenced text just before the block
	text  string
}

// fencedBlocks splits a prompt into its fenced data blocks. A block with
// no closing line runs to the end of the prompt.
func fencedBlocks(prompt string) []block {
	lines := strings.Split(strings.ReplaceAll(prompt, "\r\n", "\n"), "\n")
	var (
		out   []block
		label []string
	)
	for i := 0; i < len(lines); i++ {
		mm := openFence().FindStringSubmatch(lines[i])
		if mm == nil {
			label = append(label, lines[i])
			continue
		}
		closing := mm[1] + ">>>"
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != closing; i++ {
			body = append(body, lines[i])
		}
		out = append(out, block{label: strings.Join(label, "\n"), text: strings.Join(body, "\n")})
		label = nil
	}
	return out
}

// extractMessage finds the message the prompt is about: the last block
// whose label names a message or email (and not thread history, a profile
// or notes), else the last block, else the whole prompt. Header lines at
// the top of the block, or just before it, give the sender and subject.
func extractMessage(prompt string) message {
	blocks := fencedBlocks(prompt)
	if len(blocks) == 0 {
		return splitHeaders(prompt, message{})
	}
	pick := pickBlock(blocks, []string{"message", "email", "e-mail", "mail"},
		[]string{"thread", "earlier", "previous", "history", "quoted", "profile", "memory", "notes", "known about"})
	var m message
	// Headers written outside the fence, just before it.
	for _, line := range strings.Split(blocks[pick].label, "\n") {
		m = headerInto(m, line)
	}
	return splitHeaders(blocks[pick].text, m)
}

// pickBlock scores each block's label (the last lines before it): a
// wanted word counts 1, an unwanted word -2; the best score wins, the last
// block among equals.
func pickBlock(blocks []block, want, avoid []string) int {
	best, bestScore := len(blocks)-1, 0
	for i, b := range blocks {
		l := strings.ToLower(lastLines(b.label, 3))
		score := 0
		if containsAny(l, want...) {
			score++
		}
		if containsAny(l, avoid...) {
			score -= 2
		}
		if score > bestScore || (score == bestScore && score > 0) {
			best, bestScore = i, score
		}
	}
	return best
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// splitHeaders takes leading header lines (From:, Subject:, …) off text.
func splitHeaders(text string, m message) message {
	lines := strings.Split(strings.TrimLeft(text, "\n"), "\n")
	i := 0
	for ; i < len(lines) && headerLine().MatchString(strings.TrimSpace(lines[i])); i++ {
		m = headerInto(m, lines[i])
	}
	m.body = strings.TrimSpace(strings.Join(lines[i:], "\n"))
	return m
}

func headerInto(m message, line string) message {
	mm := headerLine().FindStringSubmatch(strings.TrimSpace(line))
	if mm == nil {
		return m
	}
	switch strings.ToLower(mm[1]) {
	case "from":
		m.from = strings.TrimSpace(mm[2])
	case "subject":
		m.subject = strings.TrimSpace(mm[2])
	}
	return m
}

// ---- the rules ----

// analysis is the outcome of the keyword rules for one message.
type analysis struct {
	intents    []string // schema order
	risk       int      // 0 low, 1 medium, 2 high
	action     string
	approval   bool
	confidence float64
	lang       string // en, de, fr
	slot       slot   // proposed meeting time, when found
	injection  bool
	bulk       bool     // automated or bulk mail phrases
	matched    []string // rule names, for comments
}

type slot struct{ day, time string }

func (s slot) ok() bool { return s.day != "" && s.time != "" }

// allIntents is the classification schema's intent list, in its order.
var allIntents = []string{
	"scheduling", "information_request", "action_request", "introduction_networking",
	"sales_vendor", "fyi_notification", "sensitive_legal_financial", "complaint",
	"follow_up", "spam", "unknown_ambiguous",
}

var riskNames = []string{"low", "medium", "high"}

// primaryOrder ranks intents for choosing the summary and the draft
// template: what matters most to the owner first.
var primaryOrder = []string{
	"spam", "sensitive_legal_financial", "complaint", "scheduling", "action_request",
	"introduction_networking", "information_request", "follow_up", "sales_vendor",
	"fyi_notification", "unknown_ambiguous",
}

// primary returns the most important of a's intents.
func (a analysis) primary() string {
	for _, in := range primaryOrder {
		if slices.Contains(a.intents, in) {
			return in
		}
	}
	return "unknown_ambiguous"
}

// phrases is a keyword list matched on whole words. It is hand-rolled
// because Go's regexp has only ASCII word boundaries and no look-around,
// and these lists hold accented words and punctuation.
type phrases []string

func words(ws ...string) phrases { return phrases(ws) }

// count reports how many distinct phrases occur in text (case-insensitive).
func (p phrases) count(text string) int {
	lower := strings.ToLower(text)
	n := 0
	for _, w := range p {
		if containsWord(lower, w) {
			n++
		}
	}
	return n
}

// MatchString reports whether any phrase occurs in text.
func (p phrases) MatchString(text string) bool {
	lower := strings.ToLower(text)
	for _, w := range p {
		if containsWord(lower, w) {
			return true
		}
	}
	return false
}

// containsWord finds w in s where neither neighbour is a letter or digit.
func containsWord(s, w string) bool {
	for off := 0; off <= len(s); {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(w):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		off = i + 1
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

var (
	injectionRE = words("ignore previous instructions", "ignore all previous", "ignore the above",
		"disregard previous", "disregard all prior", "note to the ai", "ai assistant", "as an ai",
		"system prompt", "requires_approval", "classify it as", "you are now",
		"ignoriere alle vorherigen", "ignorez les instructions")
	spamRE = words("lottery", "you have won", "claim your prize", "million dollars", "bitcoin",
		"act now", "100% free", "processing fee", "viagra", "crypto", "winner")
	bulkRE = words("unsubscribe", "do not reply", "automated reminder", "automated message",
		"this is an automated", "undeliverable", "could not be delivered", "delivery status",
		"mail delivery", "you are receiving this because")
	sensitiveRE = words("invoice", "invoices", "refund", "payment", "charged", "contract", "nda",
		"legal", "lawyer", "attorney", "lawsuit", "gdpr", "tax", "bank details", "wire transfer",
		"rechnung", "zahlung", "vertrag", "facture", "paiement", "contrat", "remboursement")
	complaintRE = words("unacceptable", "disappointed", "complaint", "frustrated", "still have no",
		"still no", "nobody has answered", "terrible", "not happy", "sort this out",
		"enttäuscht", "inakzeptabel", "déçu", "déçue", "inacceptable")
	salesRE = words("pricing", "free trial", "our platform", "ai-powered", "account executive",
		"minute demo", "a demo", "schedule a demo", "10x", "roi", "special offer", "partnership opportunity")
	introRE = words("introduce you", "like to introduce", "introduction", "intro:", "give a talk",
		"speak at", "speaking at", "talk at our", "meetup", "keynote", "conference", "panel",
		"vorstellen", "présenter")
	schedVerbRE = words("move", "reschedule", "call", "meeting", "meet", "available", "availability",
		"calendar", "slot", "verschieben", "termin", "treffen", "gespräch", "déplacer",
		"rendez-vous", "réunion", "disponible")
	dayRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|` +
			`montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|` +
			`lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche)\b`)
	})
	timeRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(\d{1,2}(?::\d{2})?\s?(?:am|pm)|\d{1,2}(?:[:.]\d{2})?\s?uhr|\d{1,2}\s?h(?:\d{2})?|\d{1,2}:\d{2})\b`)
	})
	questionRE = words("what", "which", "where", "when", "who", "how", "is there", "do you",
		"could you tell", "recommend", "should the", "should we", "or do we",
		"welche", "wann", "wo", "wie", "quel", "quelle", "où", "quand", "est-ce que")
	actionRE = words("could you review", "can you review", "please review", "could you look",
		"could you take a look", "please send", "can you send", "could you send", "please sign",
		"arrange a", "by the end of", "deadline", "when you have a moment")
	fyiRE = words("no need to reply", "fyi", "for your information", "just wanted you to",
		"just letting you know", "thank you for", "thanks for the", "as promised",
		"keine antwort nötig", "pour info")
	followRE = words("following up", "follow up", "any update", "just checking", "one more thing",
		"nachfrage", "relance")
	germanRE = words("und", "wir", "können", "unser", "nicht", "leider", "bitte", "viele grüße", "hallo", "ist")
	frenchRE = words("nous", "pouvons", "notre", "votre", "merci", "bonjour", "est-ce", "avec", "cordialement")
)

// injectionRuleOff makes analyse skip the prompt-injection rule, so a
// message written to the model is read by the other rules like any
// other. It exists only for the positive control of
// TestInjectionIsFlagged (package demo); nothing in the product sets it.
// Never from a parallel test.
var injectionRuleOff atomic.Bool

// analyse applies the keyword rules to the subject and body.
func analyse(m message) analysis {
	text := strings.Join(strings.Fields(m.subject+"\n"+m.body), " ")
	a := analysis{lang: language(text)}

	if !injectionRuleOff.Load() && injectionRE.MatchString(text) {
		a.injection = true
		a.intents = []string{"sensitive_legal_financial", "unknown_ambiguous"}
		a.risk, a.action, a.approval, a.confidence = 2, "forward", true, 0.95
		a.matched = []string{"prompt-injection phrases"}
		return a
	}
	if n := spamRE.count(text); n >= 2 {
		a.intents = []string{"spam"}
		a.risk, a.action, a.approval, a.confidence = 1, "ignore", false, 0.9
		a.matched = []string{"spam phrases"}
		return a
	}
	if bulkRE.MatchString(text) {
		a.intents = []string{"fyi_notification"}
		a.risk, a.action, a.approval, a.confidence = 0, "ignore", false, 0.85
		a.bulk = true
		a.matched = []string{"automated or bulk mail phrases"}
		return a
	}

	type rule struct {
		intent     string
		hit        bool
		risk       int
		approval   bool
		confidence float64
	}
	a.slot = findSlot(text)
	schedConf := 0.9
	if !a.slot.ok() {
		schedConf = 0.75
	}
	rules := []rule{
		{"scheduling", schedVerbRE.MatchString(text) && (dayRE().MatchString(text) || timeRE().MatchString(text)), 0, false, schedConf},
		{"information_request", strings.Contains(text, "?") && questionRE.MatchString(text), 0, true, 0.8},
		{"action_request", actionRE.MatchString(text), 1, true, 0.8},
		{"introduction_networking", introRE.MatchString(text), 0, true, 0.85},
		{"sales_vendor", salesRE.count(text) >= 2, 0, false, 0.85},
		{"fyi_notification", fyiRE.MatchString(text), 0, false, 0.85},
		{"sensitive_legal_financial", sensitiveRE.MatchString(text), 2, true, 0.85},
		{"complaint", complaintRE.MatchString(text), 1, true, 0.85},
		{"follow_up", followRE.MatchString(text), 0, false, 0.85},
	}
	a.confidence = 1
	for _, r := range rules {
		if !r.hit {
			continue
		}
		a.intents = append(a.intents, r.intent)
		a.risk = max(a.risk, r.risk)
		a.approval = a.approval || r.approval
		a.confidence = min(a.confidence, r.confidence)
		a.matched = append(a.matched, r.intent)
	}
	switch {
	case len(a.intents) == 0 && len(strings.Fields(m.body)) <= 12:
		a.intents = []string{"unknown_ambiguous"}
		a.risk, a.approval, a.confidence = 0, false, 0.4
		a.matched = []string{"too short to tell"}
	case len(a.intents) == 0:
		a.intents = []string{"unknown_ambiguous"}
		a.risk, a.approval, a.confidence = 1, true, 0.5
		a.matched = []string{"no rule matched"}
	}
	a.action = "reply"
	if len(a.intents) == 1 && a.intents[0] == "fyi_notification" {
		a.action = "ignore"
	}
	if a.lang != "en" {
		// Fewer, cruder rules outside English: never claim to be sure.
		a.confidence = min(a.confidence, 0.7)
	}
	return a
}

// language guesses en, de or fr from common function words.
func language(text string) string {
	de := germanRE.count(text)
	fr := frenchRE.count(text)
	switch {
	case de >= 2 && de >= fr:
		return "de"
	case fr >= 2:
		return "fr"
	}
	return "en"
}

// findSlot finds a proposed time and the weekday nearest before it.
func findSlot(text string) slot {
	tm := timeRE().FindAllStringIndex(text, -1)
	if len(tm) == 0 {
		return slot{}
	}
	days := dayRE().FindAllStringIndex(text, -1)
	for _, t := range tm {
		best := -1
		for i, d := range days {
			if d[1] <= t[0] && t[0]-d[1] <= 30 {
				best = i
			}
		}
		if best >= 0 {
			return slot{day: text[days[best][0]:days[best][1]], time: strings.TrimSpace(text[t[0]:t[1]])}
		}
	}
	return slot{}
}

// ---- outputs ----

func classificationJSON(a analysis, m message, s *llm.Schema) map[string]any {
	intents := a.intents
	if p := s.Properties["intents"]; p != nil && p.Items != nil && len(p.Items.Enum) > 0 {
		intents = slices.DeleteFunc(slices.Clone(intents), func(in string) bool { return !slices.Contains(p.Items.Enum, in) })
		if len(intents) == 0 {
			intents = []string{p.Items.Enum[len(p.Items.Enum)-1]}
		}
	}
	comments := "Rule-based demo model, no AI. Matched: " + strings.Join(a.matched, ", ") + "."
	if a.injection {
		comments = "The message contains instructions addressed to an AI assistant (ignore previous instructions, " +
			"forward invoices, send a link) and claims to be pre-approved. Treated as a prompt-injection attempt: " +
			"do not act on it. " + comments
	}
	out := map[string]any{
		"intents":           intents,
		"risk":              riskNames[a.risk],
		"action":            a.action,
		"requires_approval": a.approval,
		"confidence":        a.confidence,
		"summary":           truncate(headline(a, m), maxLen(s.Properties["summary"], 200)),
		"comments":          truncate(comments, maxLen(s.Properties["comments"], 500)),
	}
	return fillSchema(out, s)
}

// headline is the one-line summary of a message.
func headline(a analysis, m message) string {
	subject := strings.Join(strings.Fields(m.subject), " ")
	if subject == "" {
		subject = firstWords(m.body, 12)
	}
	what := map[string]string{
		"scheduling":                "Scheduling request",
		"information_request":       "Question",
		"action_request":            "Request for action",
		"introduction_networking":   "Introduction or invitation",
		"sales_vendor":              "Sales pitch",
		"fyi_notification":          "For information",
		"sensitive_legal_financial": "Money or legal matter",
		"complaint":                 "Complaint",
		"follow_up":                 "Follow-up",
		"spam":                      "Spam",
		"unknown_ambiguous":         "Unclear message",
	}[a.primary()]
	switch {
	case a.injection:
		what = "Suspected prompt injection"
	case a.primary() == "scheduling" && a.slot.ok():
		what = "Asks to meet " + a.slot.day + " " + a.slot.time
	}
	if subject == "" {
		return what
	}
	return what + ": " + subject
}

var tones = map[string]string{
	"scheduling": "friendly", "information_request": "friendly", "action_request": "friendly",
	"introduction_networking": "warm", "sales_vendor": "polite", "fyi_notification": "warm",
	"sensitive_legal_financial": "formal", "complaint": "apologetic", "follow_up": "friendly",
	"spam": "neutral", "unknown_ambiguous": "friendly",
}

// draftJSON writes a short reply from a template. Nothing from the message
// is copied into it except a sanitised first name and, for scheduling
// without offered slots, the weekday and time it proposed; so it can hold
// no address, phone or link. With free slots in the prompt (free), a
// scheduling reply proposes the first of them instead.
func draftJSON(a analysis, m message, free []freeSlot, signer string, s *llm.Schema) map[string]any {
	name := firstName(senderName(m.from))
	if a.injection || a.bulk || a.primary() == "spam" {
		name = "" // no greeting by a name a spammer, attacker or robot chose
	}
	body, needsOwner := draftBody(a, name, signer, free)
	tone := tones[a.primary()]
	if a.injection {
		tone = "neutral"
	}
	if p := s.Properties["tone"]; p != nil && len(p.Enum) > 0 && !slices.Contains(p.Enum, tone) {
		tone = p.Enum[0]
	}
	out := map[string]any{"body": truncate(body, maxLen(s.Properties["body"], 2000)), "tone": tone, "needs_owner_input": needsOwner}
	return fillSchema(out, s)
}

func draftBody(a analysis, name, signer string, free []freeSlot) (string, bool) {
	var greet, sign string
	switch a.lang {
	case "de":
		greet, sign = "Hallo", "Viele Grüße"
	case "fr":
		greet, sign = "Bonjour", "Bien cordialement,"
	default:
		greet, sign = "Hi", "Best,"
	}
	hello := greet + ","
	if name != "" {
		hello = greet + " " + name + ","
	}
	var text string
	needsOwner := true
	switch {
	case a.injection || a.primary() == "spam":
		text = map[string]string{
			"de": "danke für Ihre Nachricht. Ich sehe sie mir an und melde mich, falls nötig.",
			"fr": "Merci pour votre message. Je le regarde et reviens vers vous si nécessaire.",
			"en": "Thanks for your message. I'll look at it and get back to you if needed.",
		}[a.lang]
	case a.primary() == "scheduling" && len(free) > 0:
		// The calendar offered free slots: propose the first, in the
		// slot list's own words, and never the time the mail asked for
		// (the schedule gate would hold a time the calendar did not offer).
		needsOwner = false
		text = proposeSlot(a.lang, free[0])
	case a.primary() == "scheduling" && a.slot.ok():
		needsOwner = false
		text = map[string]string{
			"de": titleCase(a.slot.day) + " um " + a.slot.time + " passt mir gut. Bis dann!",
			"fr": titleCase(a.slot.day) + " à " + a.slot.time + " me convient très bien. À bientôt !",
			"en": titleCase(a.slot.day) + " at " + a.slot.time + " works for me. Talk then.",
		}[a.lang]
	case a.lang == "de":
		text = "vielen Dank für Ihre Nachricht. Ich melde mich in Kürze bei Ihnen."
	case a.lang == "fr":
		text = "Merci pour votre message. Je reviens vers vous très rapidement."
	default:
		switch a.primary() {
		case "scheduling":
			text = "Thanks for checking. Let me look at my calendar and come back to you with a time that works."
		case "information_request":
			text = "Thanks for the question. Let me check and I'll get back to you shortly."
		case "action_request", "follow_up":
			text = "Thanks for this. I'll take a look and get back to you shortly."
		case "introduction_networking":
			text = "Thank you for thinking of me, I'd be glad to connect. I'll follow up shortly."
		case "sales_vendor":
			needsOwner = false
			text = "Thanks for reaching out. We're not looking for new tools at the moment, so I'll pass for now."
		case "fyi_notification":
			needsOwner = false
			text = "Thank you, much appreciated!"
		case "sensitive_legal_financial":
			text = "Thank you for flagging this. I'm reviewing the details and will get back to you shortly."
		case "complaint":
			text = "I'm sorry to hear about this, and thank you for letting me know. I'm looking into it and will get back to you shortly."
		default:
			needsOwner = false
			text = "Could you tell me a little more about what you mean? I want to make sure I answer the right question."
		}
	}
	return hello + "\n\n" + text + "\n\n" + sign + "\n" + signer, needsOwner
}

// contactSummary summarises what the prompt shows of one contact: the
// last few history items or subjects, with anything that looks like an
// address or link left out.
func contactSummary(prompt string, s *llm.Schema) string {
	blocks := fencedBlocks(prompt)
	if len(blocks) == 0 {
		blocks = []block{{text: prompt}}
	}
	b := blocks[pickBlock(blocks, []string{"history", "messages"}, []string{"previous summary"})]
	var items []string
	for _, l := range strings.Split(b.text, "\n") {
		l = strings.TrimSpace(l)
		var item string
		if mm := headerLine().FindStringSubmatch(l); mm != nil && strings.EqualFold(mm[1], "subject") {
			item = mm[2]
		} else if rest, ok := strings.CutPrefix(l, "- "); ok {
			item = rest
		}
		item = truncate(scrub(item), 80)
		if item != "" && !slices.Contains(items, item) {
			items = append(items, item)
		}
	}
	if len(items) == 0 {
		return "No history yet."
	}
	if len(items) > 3 {
		items = items[len(items)-3:]
	}
	return truncate("Recent topics: "+strings.Join(items, "; ")+".", maxLen(s, 300))
}

// scrub drops words that hold an address or a link.
func scrub(s string) string {
	f := strings.Fields(s)
	f = slices.DeleteFunc(f, func(w string) bool {
		lw := strings.ToLower(w)
		return strings.Contains(lw, "@") || strings.Contains(lw, "://") || strings.HasPrefix(lw, "www.")
	})
	return strings.Join(f, " ")
}

// ---- helpers ----

// fillSchema gives every schema property missing from out a valid zero
// value, so that the answer satisfies a schema that grew new fields.
func fillSchema(out map[string]any, s *llm.Schema) map[string]any {
	if s == nil {
		return out
	}
	for k, p := range s.Properties {
		if _, ok := out[k]; !ok {
			out[k] = zeroFor(p)
		}
	}
	return out
}

func zeroFor(s *llm.Schema) any {
	if s == nil {
		return nil
	}
	switch s.Type {
	case "object":
		return fillSchema(map[string]any{}, s)
	case "array":
		if s.MinItems != nil && *s.MinItems > 0 && s.Items != nil {
			return []any{zeroFor(s.Items)}
		}
		return []any{}
	case "boolean":
		return false
	case "number", "integer":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 0
	default:
		if len(s.Enum) > 0 {
			return s.Enum[0]
		}
		return ""
	}
}

func maxLen(s *llm.Schema, def int) int {
	if s != nil && s.MaxLength != nil && *s.MaxLength > 0 {
		return int(*s.MaxLength)
	}
	return def
}

// truncate cuts s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		return strings.Join(f[:n], " ") + "…"
	}
	return strings.Join(f, " ")
}

// senderName returns the display name of a From value, or "".
func senderName(from string) string {
	if from == "" {
		return ""
	}
	if a, err := mail.ParseAddress(from); err == nil {
		return a.Name
	}
	if i := strings.IndexByte(from, '<'); i > 0 {
		return strings.Trim(strings.TrimSpace(from[:i]), `"`)
	}
	return ""
}

// firstName returns the first word of name if it is a plausible given name
// (letters, hyphens, apostrophes; at most 30 runes), else "". The display
// name is written by the sender, so nothing else of it reaches a draft.
func firstName(name string) string {
	f := strings.Fields(name)
	if len(f) == 0 {
		return ""
	}
	w := strings.Trim(f[0], ",")
	if w == "" || utf8.RuneCountInString(w) > 30 {
		return ""
	}
	for _, r := range w {
		if !unicode.IsLetter(r) && r != '-' && r != '\'' {
			return ""
		}
	}
	return w
}

func titleCase(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + strings.ToLower(s[n:])
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]*llm.Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
