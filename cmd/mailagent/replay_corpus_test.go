package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/app/replay"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// This file replays a mailbox built from the SpamAssassin corpus whose
// ground truth the test scripts (owner replies in Sent, flags, Archive
// and Trash) and whose model answers come from a table keyed by
// Message-ID, and checks every score of `replay --json` against an
// expectation computed here from those two tables and the policy alone:
// the rules as the README states them, not replay's code.

// corpusTruth is what the owner did with one corpus message.
type corpusTruth struct {
	folder    string // INBOX, Archive or Trash
	automated bool   // the test added a List-Id: routed automated, no model call
	sender    string
	authPass  bool
	arrival   time.Time
	seen      bool
	flagged   bool
	deleted   bool // \Deleted on a message left in INBOX
	// reply is how the owner's Sent folder answers it: "" (not at all),
	// "fast" and "slow" (In-Reply-To), "refs" (References only), and three
	// that must not count: "wrong" (to another address), "spoofed" (in
	// Sent, but not from the owner), "agent" (mailagent's own reply).
	reply     string
	latency   time.Duration
	replyText string
	wrongTo   string // the recipient of a "wrong" reply
}

// answered reports whether the owner's reply counts as ground truth.
func (c *corpusTruth) answered() bool {
	return c.reply == "fast" || c.reply == "slow" || c.reply == "refs"
}

// corpusAnswer is the fake model's answer for one message.
type corpusAnswer struct {
	garbage   bool // an invalid answer, twice (the repair fails too)
	action    string
	risk      string
	approval  bool
	conf      float64
	intent    string
	tokensIn  int
	tokensOut int
	draft     string
}

// corpusMsg is one message of the mailbox: its ground truth and the
// model's answer, with what the test needs to name it.
type corpusMsg struct {
	id      string // Message-ID, as mail.Parse gives it
	subject string // decoded, as mail.Parse gives it
	uid     imap.UID
	truth   corpusTruth
	model   corpusAnswer
}

// sentMail is one message the test put in Sent, for the known-contact
// expectation: the owner wrote to `to` at `at` (ownerMail false: it does
// not count, it is not the owner's).
type sentMail struct {
	to        string
	at        time.Time
	ownerMail bool
}

// corpusModel answers from the table by the Date line of the email being
// classified or replied to (each message has its own arrival time).
type corpusModel struct {
	mu     sync.Mutex
	byDate map[string]*corpusMsg
	miss   int
}

func (cm *corpusModel) lookup(user, marker string) *corpusMsg {
	i := strings.Index(user, marker)
	if i < 0 {
		return nil
	}
	for _, line := range strings.Split(user[i:], "\n") {
		if d, ok := strings.CutPrefix(line, "Date: "); ok {
			cm.mu.Lock()
			defer cm.mu.Unlock()
			m := cm.byDate[strings.TrimSpace(d)]
			if m == nil {
				cm.miss++
			}
			return m
		}
	}
	return nil
}

func (cm *corpusModel) handle(req *geminitest.Request) geminitest.Reply {
	user := req.UserText()
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	if _, ok := props["intents"]; ok {
		m := cm.lookup(user, "Email to classify:")
		if m == nil || m.model.garbage {
			return geminitest.Reply{Text: `{"intents": ["nonsense"], "risk": "extreme"}`, Usage: llm.Usage{PromptTokens: 10, OutputTokens: 5, TotalTokens: 15}}
		}
		a := m.model
		return geminitest.JSONReply(map[string]any{
			"intents": []string{a.intent}, "risk": a.risk, "action": a.action, "requires_approval": a.approval,
			"confidence": a.conf, "summary": "s", "comments": "c",
		}, llm.Usage{PromptTokens: int32(a.tokensIn), OutputTokens: int32(a.tokensOut), TotalTokens: int32(a.tokensIn + a.tokensOut)})
	}
	body := "unknown message"
	if m := cm.lookup(user, "Email to reply to:"); m != nil {
		body = m.model.draft
	}
	return geminitest.JSONReply(map[string]any{"body": body, "tone": "brief", "needs_owner_input": false},
		llm.Usage{PromptTokens: 200, OutputTokens: 20, TotalTokens: 220})
}

// corpusHeaders are the corpus headers kept: the subject, the id and
// what decodes the body. The test writes From, To, Date and
// Authentication-Results itself, and drops the rest (List-Id, Precedence,
// Return-Path… would route the mail by the corpus's headers, not the
// test's table).
var corpusHeaders = map[string]bool{"subject": true, "message-id": true, "mime-version": true,
	"content-type": true, "content-transfer-encoding": true}

// corpusRewrite returns the corpus message raw with the test's headers,
// or false when it does not suit (no body, no Message-ID, a report or an
// invitation, which the pipeline treats apart).
func corpusRewrite(raw []byte, top string) (string, bool) {
	s := strings.ReplaceAll(string(e2e.StripMboxFrom(raw)), "\r\n", "\n")
	head, body, ok := strings.Cut(s, "\n\n")
	low := strings.ToLower(s)
	if !ok || strings.Contains(low, "text/calendar") || strings.Contains(low, "multipart/report") {
		return "", false
	}
	var kept []string
	keep, hasID := false, false
	for _, line := range strings.Split(head, "\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			if keep {
				kept = append(kept, line)
			}
			continue
		}
		name, _, _ := strings.Cut(line, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		keep = corpusHeaders[name]
		hasID = hasID || name == "message-id"
		if keep {
			kept = append(kept, line)
		}
	}
	if !hasID {
		return "", false
	}
	return top + strings.Join(kept, "\n") + "\n\n" + body, true
}

// plainSubject reports whether a subject gives the output guard nothing
// to question in the reply's "Re: subject" (with --drafts the guard
// judges the subject too): letters and plain punctuation only, so no
// number, address, link or account code, no word of 20 letters or more,
// and none of the payment words the guard looks for. The test keeps
// only such messages, so that the guard's verdict depends on the draft
// alone, which the model table writes in plain words.
func plainSubject(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !strings.ContainsRune(" ,;:!?'\"()[]-", r) {
			return false
		}
	}
	low := strings.ToLower(s)
	for _, w := range []string{"iban", "swift", "bic", "wir", "bank", "account", "acct", "routing", "sort code", "beneficiary",
		"gift", "card", "bitcoin", "btc", "ethereum", "usd", "tether", "litecoin", "monero", "xmr", "crypto", "wallet",
		"western", "moneygram", "zelle", "venmo", "cash", "payment"} {
		if strings.Contains(low, w) {
			return false
		}
	}
	return !slices.ContainsFunc(strings.Fields(s), func(w string) bool { return len([]rune(w)) >= 20 })
}

func replayCorpusDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("MAILAGENT_CORPORA"); dir != "" {
		return dir
	}
	return e2e.CorpusDir(t) // skips when absent
}

// jaccard is the README's draft similarity: the share of distinct
// lower-cased words (runs of letters and digits) two texts have in common.
func jaccard(a, b string) float64 {
	set := func(s string) map[string]bool {
		out := map[string]bool{}
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			out[w] = true
		}
		return out
	}
	sa, sb := set(a), set(b)
	if len(sa) == 0 || len(sb) == 0 {
		return 0
	}
	both := 0
	for w := range sa {
		if sb[w] {
			both++
		}
	}
	return float64(both) / float64(len(sa)+len(sb)-both)
}

// corpusWorld is the replayed mailbox and its two tables.
type corpusWorld struct {
	h     *harness
	model *corpusModel
	msgs  []*corpusMsg
	sent  []sentMail
	pol   string // the --policy file
	uidv  map[string]uint32
}

// The policy replayed: min_confidence 0.70, sales_vendor never
// auto-sent, new contacts never, and caps low enough to bite (one
// auto-send per contact and two in all per UTC day).
const (
	corpusMinConf    = 0.70
	corpusPerContact = 1
	corpusPerDay     = 2
	corpusNeverAuto  = "sales_vendor"
	corpusMessages   = 100
)

var corpusDraftWords = []string{"thanks", "for", "the", "note", "i", "will", "look", "at", "it", "this", "week", "sounds", "good", "to", "me", "see", "you", "soon"}

func newCorpusWorld(t *testing.T) *corpusWorld {
	dir := replayCorpusDir(t)
	var files []string
	for _, sub := range []string{"easy-ham-1", "hard-ham-1", "spam-1"} {
		m, _ := filepath.Glob(filepath.Join(dir, "spamassassin", sub, "*"))
		files = append(files, m...)
	}
	slices.Sort(files)
	if len(files) < 10*corpusMessages {
		t.Skipf("corpus at %s has %d messages, want at least %d", dir, len(files), 10*corpusMessages)
	}
	cm := &corpusModel{byDate: map[string]*corpusMsg{}}
	h := newHarness(t, cm.handle, "", func(o *memimap.Options) { o.Mailboxes = append(o.Mailboxes, "Archive", "Trash") })
	w := &corpusWorld{h: h, model: cm, uidv: map[string]uint32{}}
	rng := rand.New(rand.NewPCG(13, 2026))
	senders := make([]string, 12)
	for i := range senders {
		senders[i] = fmt.Sprintf("s%02d@people%02d.example", i, i)
	}
	base := time.Now().UTC().Add(-40 * 24 * time.Hour).Truncate(24 * time.Hour).Add(9 * time.Hour)
	ctx := context.Background()
	putSent := func(raw string, at time.Time, to string, owner bool) {
		t.Helper()
		if _, err := h.imap.Append(ctx, ownerAddr, "Sent", e2e.CRLF([]byte(raw)), []imap.Flag{imap.FlagSeen}, at); err != nil {
			t.Fatal(err)
		}
		w.sent = append(w.sent, sentMail{to: to, at: at, ownerMail: owner})
	}
	// The owner wrote to s00…s07 a month before: known contacts. s08…s11
	// become known only once the owner writes to them.
	for i := range 8 {
		at := base.Add(-30 * 24 * time.Hour)
		putSent(fmt.Sprintf("From: Ada Lovelace <ada@example.com>\nTo: %s\nSubject: hello\nDate: %s\nMessage-ID: <intro%d@example.com>\n\nHi\n",
			senders[i], at.Format(time.RFC1123Z), i), at, senders[i], true)
	}
	seenIDs := map[string]bool{}
	for _, f := range files {
		if len(w.msgs) == corpusMessages {
			break
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		i := len(w.msgs)
		if rng.IntN(10) != 0 { // a sample spread over the three corpus folders
			continue
		}
		tr := corpusTruth{folder: "INBOX", sender: senders[(i/2)%len(senders)], authPass: i%11 != 6,
			arrival: base.Add(time.Duration(i)*5*time.Hour + time.Duration(i)*time.Minute)}
		switch {
		case i%13 == 4:
			tr.folder = "Archive"
		case i%17 == 9:
			tr.folder = "Trash"
		}
		tr.automated = i%15 == 7
		verdict := "pass"
		if !tr.authPass {
			verdict = "fail"
		}
		top := authResults(tr.sender, verdict) + "\nFrom: Corpus Sender <" + tr.sender + ">\nTo: Ada <ada@example.com>\nDate: " +
			tr.arrival.Format(time.RFC1123Z) + "\n"
		if tr.automated {
			top += "List-Id: <weekly.lists.example.org>\n"
		}
		built, ok := corpusRewrite(raw, top)
		if !ok {
			continue
		}
		pm := mail.Parse([]byte(built))
		if pm.Synthesized || seenIDs[mail.IDKey(pm.MessageID)] || !pm.Date.Equal(tr.arrival) || !plainSubject(pm.Subject) {
			continue
		}
		seenIDs[mail.IDKey(pm.MessageID)] = true
		m := &corpusMsg{id: pm.MessageID, subject: pm.Subject}
		tr.seen = rng.IntN(10) < 8
		tr.flagged = rng.IntN(10) == 0
		tr.deleted = i == 42
		switch r := rng.IntN(20); {
		case i == 10:
			tr.reply, tr.wrongTo = "wrong", senders[10] // s10 becomes known, the sender does not get an answer
		case i == 20:
			tr.reply = "spoofed"
		case i == 30:
			tr.reply = "agent"
		case r < 9:
		case r < 14:
			tr.reply = "fast"
		case r < 17:
			tr.reply = "slow"
		default:
			tr.reply = "refs"
		}
		switch tr.reply {
		case "fast", "refs", "wrong", "spoofed", "agent":
			tr.latency = time.Duration(5+rng.IntN(50)) * time.Minute
		case "slow":
			tr.latency = time.Duration(20+rng.IntN(30)) * time.Hour
		}
		// The model's answer.
		a := corpusAnswer{action: "reply", risk: "low", intent: "information_request",
			conf: float64(50+rng.IntN(50)) / 100, tokensIn: 300 + i, tokensOut: 20 + i%9}
		switch r := rng.IntN(20); {
		case r < 5:
			a.action = "ignore"
		case r < 7:
			a.action = "forward"
		}
		switch r := rng.IntN(10); {
		case r == 0:
			a.risk = "medium"
		case r == 1:
			a.risk = "high"
		}
		a.approval = rng.IntN(12) == 0
		if rng.IntN(7) == 0 {
			a.intent = corpusNeverAuto
		}
		a.garbage = !tr.automated && i%19 == 11
		perm := rng.Perm(len(corpusDraftWords))
		var dw []string
		for _, k := range perm[:6] {
			dw = append(dw, corpusDraftWords[k])
		}
		a.draft = strings.Join(dw, " ")
		// The owner's reply shares the draft's words about half the time
		// (similar), else none (very different: similarity 0).
		if rng.IntN(2) == 0 {
			tr.replyText = strings.Join(dw[:4], " ") + " indeed"
		} else {
			tr.replyText = "not interested sorry"
		}
		m.truth, m.model = tr, a
		var flags []imap.Flag
		if tr.seen {
			flags = append(flags, imap.FlagSeen)
		}
		if tr.flagged {
			flags = append(flags, imap.FlagFlagged)
		}
		if tr.deleted {
			flags = append(flags, imap.FlagDeleted)
		}
		if tr.answered() {
			flags = append(flags, imap.FlagAnswered)
		}
		uid, err := h.imap.Append(ctx, ownerAddr, tr.folder, e2e.CRLF([]byte(built)), flags, tr.arrival)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		m.uid = uid
		cm.mu.Lock()
		cm.byDate[tr.arrival.Format(time.RFC1123Z)] = m
		cm.mu.Unlock()
		w.msgs = append(w.msgs, m)

		// The owner's Sent folder.
		if tr.reply == "" {
			continue
		}
		at := tr.arrival.Add(tr.latency)
		from, to, thread, extra, owner := "Ada Lovelace <ada@example.com>", tr.sender, "In-Reply-To: <"+m.id+">", "", true
		switch tr.reply {
		case "refs":
			thread = "References: <older@example.net> <" + m.id + ">"
		case "wrong":
			to = tr.wrongTo
		case "spoofed":
			from, owner = "Ada Lovelace <ada@example.net>", false
		case "agent":
			extra, owner = "X-Mailagent-Trace: replay-test\n", false
		}
		putSent(fmt.Sprintf("From: %s\nTo: %s\nSubject: Re: corpus\nDate: %s\nMessage-ID: <re%d@example.com>\n%s%s\n\n%s\n",
			from, to, at.Format(time.RFC1123Z), i, thread, extra, tr.replyText), at, to, owner)
	}
	if len(w.msgs) < corpusMessages {
		t.Skipf("only %d usable corpus messages, want %d", len(w.msgs), corpusMessages)
	}
	w.pol = filepath.Join(h.dir, "corpus-policy.toml")
	pol := fmt.Sprintf("[policy]\nmin_confidence = %.2f\nnever_auto = [%q]\nauto_send_new_contacts = false\nmax_auto_per_contact_per_day = %d\nmax_auto_per_day = %d\n",
		corpusMinConf, corpusNeverAuto, corpusPerContact, corpusPerDay)
	if err := os.WriteFile(w.pol, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// knownAt is the known-contact rule: the owner (From one of theirs, not
// mailagent's mail) wrote to addr before t.
func (w *corpusWorld) knownAt(addr string, t time.Time) bool {
	for _, s := range w.sent {
		if s.ownerMail && strings.EqualFold(s.to, addr) && s.at.Before(t) {
			return true
		}
	}
	return false
}

// eligible is the policy's auto-send rule at min_confidence minConf,
// before the caps: a reply, low risk, no approval asked, confidence at
// least minConf, no intent in never_auto, an authenticated sender the
// owner had written to before the message arrived, and mail that is not
// automated.
func (w *corpusWorld) eligible(m *corpusMsg, minConf float64) bool {
	a, tr := m.model, m.truth
	return !tr.automated && !a.garbage && a.action == "reply" && a.risk == "low" && !a.approval && a.conf >= minConf &&
		a.intent != corpusNeverAuto && tr.authPass && w.knownAt(tr.sender, tr.arrival)
}

// capsWalk walks the messages in arrival order through the daily caps
// (per sender and in all, per UTC day of arrival) and returns which of
// those eligible at minConf are sent and which the caps refuse.
func (w *corpusWorld) capsWalk(minConf float64) (sent, refused map[*corpusMsg]bool) {
	order := slices.Clone(w.msgs)
	slices.SortFunc(order, func(a, b *corpusMsg) int { return a.truth.arrival.Compare(b.truth.arrival) })
	sent, refused = map[*corpusMsg]bool{}, map[*corpusMsg]bool{}
	perContact, perDay := map[string]int{}, map[string]int{}
	for _, m := range order {
		if !w.eligible(m, minConf) {
			continue
		}
		day := m.truth.arrival.UTC().Format("2006-01-02")
		ck := day + " " + m.truth.sender
		if perContact[ck] >= corpusPerContact || perDay[day] >= corpusPerDay {
			refused[m] = true
			continue
		}
		perContact[ck]++
		perDay[day]++
		sent[m] = true
	}
	return sent, refused
}

// expect computes replay --json from the tables (drafts: with --drafts).
func (w *corpusWorld) expect(drafts bool) ReplayJSON {
	var j ReplayJSON
	j.Decisions = map[string]int{}
	sent, refused := w.capsWalk(corpusMinConf)
	var lat []time.Duration
	var sims []float64
	anyDraft := false
	veryDiff := 0
	for _, m := range w.msgs {
		tr, a := m.truth, m.model
		j.Messages++
		// The decision, and what the model was asked.
		var decision string
		switch {
		case tr.automated:
			decision = "archive"
		case a.garbage:
			decision = "needs_review"
			j.Cost.Calls += 2
			j.Cost.TokensIn += 20
			j.Cost.TokensOut += 10
		default:
			j.Cost.Calls++
			j.Cost.TokensIn += int64(a.tokensIn)
			j.Cost.TokensOut += int64(a.tokensOut)
			switch {
			case a.action == "ignore":
				decision = "ignore"
			case a.action == "forward":
				decision = "notify"
			case sent[m]:
				decision = "auto_send"
			default:
				decision = "queue" // a gate fails, or the caps refuse it
			}
		}
		needsReply := decision == "auto_send" || decision == "queue"
		drafted := drafts && needsReply
		if drafted {
			anyDraft = true
			j.Cost.Calls++
			j.Cost.TokensIn += 200
			j.Cost.TokensOut += 20
		}
		j.Decisions[decision]++
		if decision == "needs_review" {
			j.NeedsReview++
			continue
		}
		j.Incoming++
		replied := tr.answered()
		if replied {
			j.Owner.Replied++
			lat = append(lat, tr.latency)
		}
		if tr.flagged {
			j.Owner.Flagged++
		}
		if !tr.seen {
			j.Owner.Unread++
		}
		if tr.folder == "Trash" || tr.deleted {
			j.Owner.Deleted++
		}
		if tr.folder == "Archive" {
			j.Owner.Archived++
		}
		switch {
		case needsReply && replied:
			j.NeedsReply.TruePositive++
		case needsReply:
			j.NeedsReply.FalsePositive++
		case replied:
			j.NeedsReply.FalseNegative++
		default:
			j.NeedsReply.TrueNegative++
		}
		sim := -1.0
		if drafted && replied {
			sim = jaccard(a.draft, tr.replyText)
			sims = append(sims, sim)
		}
		if refused[m] {
			j.AutoSends.CapLimited++
		}
		if decision != "auto_send" {
			continue
		}
		j.AutoSends.Total++
		item := ReplayAutoSendJSON{Message: MessageKeyJSON{Account: "personal", Mailbox: tr.folder, UIDValidity: w.uidv[tr.folder], UID: uint32(m.uid)},
			From: tr.sender, Subject: m.subject, Date: tr.arrival, Confidence: a.conf}
		switch {
		case !replied:
			j.AutoSends.NeverAnswered++
			j.Unwanted = append(j.Unwanted, item)
		case sim >= 0 && sim < 0.10:
			veryDiff++
			item.Similarity = &sim
			j.VeryDifferent = append(j.VeryDifferent, item)
		default:
			j.AutoSends.OwnerAlsoAnswered++
		}
	}
	newest := func(a, b ReplayAutoSendJSON) int { return b.Date.Compare(a.Date) }
	slices.SortFunc(j.Unwanted, newest)
	slices.SortFunc(j.VeryDifferent, newest)
	if j.Unwanted == nil {
		j.Unwanted = []ReplayAutoSendJSON{}
	}
	j.AutoSends.MinConfidence, j.AutoSends.Unwanted = corpusMinConf, j.AutoSends.NeverAnswered
	j.AutoSends.MaxPerContactPerDay, j.AutoSends.MaxPerDay = corpusPerContact, corpusPerDay
	if anyDraft {
		j.AutoSends.AnsweredVeryDifferently = &veryDiff
		if j.VeryDifferent == nil {
			j.VeryDifferent = []ReplayAutoSendJSON{}
		}
	}
	frac := func(a, b int) *float64 {
		if b == 0 {
			return nil
		}
		v := float64(a) / float64(b)
		return &v
	}
	nr := &j.NeedsReply
	nr.Precision = frac(nr.TruePositive, nr.TruePositive+nr.FalsePositive)
	nr.Recall = frac(nr.TruePositive, nr.TruePositive+nr.FalseNegative)
	if n := len(lat); n > 0 {
		slices.Sort(lat)
		med := lat[n/2]
		if n%2 == 0 {
			med = (lat[n/2-1] + lat[n/2]) / 2
		}
		v := med.Seconds()
		j.Owner.MedianReplySeconds = &v
	}
	j.Drafts.Enabled, j.Drafts.Measure, j.Drafts.VeryDifferentBelow = drafts, replay.SimilarityMeasure, 0.10
	if n := len(sims); n > 0 {
		j.Drafts.Compared = n
		sum := 0.0
		for _, s := range sims {
			sum += s
		}
		mean := sum / float64(n)
		slices.Sort(sims)
		med := sims[n/2]
		if n%2 == 0 {
			med = (sims[n/2-1] + sims[n/2]) / 2
		}
		j.Drafts.MeanSimilarity, j.Drafts.MedianSimilarity = &mean, &med
	}
	for k := 50; k <= 95; k += 5 {
		t := float64(k) / 100
		s, r := w.capsWalk(t)
		row := ReplayThresholdJSON{MinConfidence: t, AutoSends: len(s), CapLimited: len(r)}
		for m := range s {
			if !m.truth.answered() {
				row.Unwanted++
			}
		}
		j.Thresholds = append(j.Thresholds, row)
	}
	j.Cost.Model = "gemini-test"
	return j
}

// checkReplayJSON compares got with want: ratios and similarities within
// a rounding error, everything else exactly.
func checkReplayJSON(t *testing.T, got, want ReplayJSON) {
	t.Helper()
	approx := func(name string, g, w **float64, tol float64) {
		switch {
		case (*g == nil) != (*w == nil):
			t.Errorf("%s: got %v, want %v", name, ptrStr(*g), ptrStr(*w))
		case *g != nil && math.Abs(**g-**w) > tol:
			t.Errorf("%s: got %.6f, want %.6f", name, **g, **w)
		}
		*g, *w = nil, nil
	}
	// Precision and recall are reported to 4 decimals.
	approx("needs_reply.precision", &got.NeedsReply.Precision, &want.NeedsReply.Precision, 5e-5)
	approx("needs_reply.recall", &got.NeedsReply.Recall, &want.NeedsReply.Recall, 5e-5)
	approx("drafts.mean_similarity", &got.Drafts.MeanSimilarity, &want.Drafts.MeanSimilarity, 1e-9)
	approx("drafts.median_similarity", &got.Drafts.MedianSimilarity, &want.Drafts.MedianSimilarity, 1e-9)
	for _, l := range [][2][]ReplayAutoSendJSON{{got.Unwanted, want.Unwanted}, {got.VeryDifferent, want.VeryDifferent}} {
		for i := range min(len(l[0]), len(l[1])) {
			approx(fmt.Sprintf("similarity of %s uid %d", l[1][i].Message.Mailbox, l[1][i].Message.UID), &l[0][i].Similarity, &l[1][i].Similarity, 1e-9)
		}
	}
	got.ElapsedSeconds, got.TotalElapsedSeconds = 0, 0
	gs, ws := mustJSON(t, got), mustJSON(t, want)
	if gs == ws {
		return
	}
	// Say which top-level field differs.
	var gm, wm map[string]any
	decodeInto(t, gs, &gm)
	decodeInto(t, ws, &wm)
	for k := range wm {
		if a, b := mustJSON(t, gm[k]), mustJSON(t, wm[k]); a != b {
			t.Errorf("%s:\n got %s\nwant %s", k, a, b)
		}
	}
}

// TestReplayCorpusScoresByExpectation replays 100 SpamAssassin corpus
// messages (INBOX, Archive, Trash) with scripted owner replies in Sent
// (fast, slow, by References only, and three that must not count: to
// another address, in Sent but not from the owner, and mailagent's own),
// flags, and a fake model answering from a table keyed by Message-ID; the
// policy has caps low enough to bite. Every number of replay --json, with
// and without --drafts, must equal the expectation computed from the two
// tables by the README's rules, and the model must be asked exactly the
// requests expected. Skipped without the corpus ($MAILAGENT_CORPORA or
// ../shared/corpora).
func TestReplayCorpusScoresByExpectation(t *testing.T) {
	t.Parallel()
	w := newCorpusWorld(t)
	h := w.h
	for _, drafts := range []bool{false, true} {
		args := []string{"replay", "--policy", w.pol, "--json", "--fresh"}
		if drafts {
			args = append(args, "--drafts")
		}
		calls0 := len(h.gemini.Requests())
		out, stderr, code := h.run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		got := decodeReplay(t, out)
		// Each folder's UIDVALIDITY, which memimap does not tell, is taken
		// from the report; the UIDs are the test's own.
		for _, l := range [][]ReplayAutoSendJSON{got.Unwanted, got.VeryDifferent} {
			for _, u := range l {
				if u.Message.UIDValidity == 0 {
					t.Fatalf("%s uid %d: uidvalidity 0", u.Message.Mailbox, u.Message.UID)
				}
				w.uidv[u.Message.Mailbox] = u.Message.UIDValidity
			}
		}
		want := w.expect(drafts)
		if n := len(h.gemini.Requests()) - calls0; int64(n) != want.Cost.Calls {
			t.Errorf("drafts=%t: the model got %d requests, want %d", drafts, n, want.Cost.Calls)
		}
		// The expectation must exercise what it checks.
		sane := want.AutoSends.Total > 0 && want.AutoSends.NeverAnswered > 0 && want.AutoSends.OwnerAlsoAnswered > 0 &&
			want.AutoSends.CapLimited > 0 && want.NeedsReview > 0 && want.Decisions["archive"] > 0 && want.Owner.Archived > 0 &&
			want.Owner.Deleted > 1 && want.NeedsReply.FalseNegative > 0 && want.NeedsReply.FalsePositive > 0
		if drafts {
			sane = sane && *want.AutoSends.AnsweredVeryDifferently > 0 && want.Drafts.Compared > 0
		}
		if !sane {
			t.Fatalf("drafts=%t: the scripted mailbox does not exercise every score: %s", drafts, mustJSON(t, want))
		}
		checkReplayJSON(t, got, want)
		t.Logf("drafts=%t: %d messages, %d incoming, %d need review; TP %d FP %d FN %d TN %d; auto-sends %d (also answered %d, very differently %v, never %d, capped %d); %d requests",
			drafts, want.Messages, want.Incoming, want.NeedsReview, want.NeedsReply.TruePositive, want.NeedsReply.FalsePositive,
			want.NeedsReply.FalseNegative, want.NeedsReply.TrueNegative, want.AutoSends.Total, want.AutoSends.OwnerAlsoAnswered,
			ptrInt(want.AutoSends.AnsweredVeryDifferently), want.AutoSends.NeverAnswered, want.AutoSends.CapLimited, want.Cost.Calls)
	}
	w.model.mu.Lock()
	miss := w.model.miss
	w.model.mu.Unlock()
	if miss != 0 {
		t.Errorf("the fake model was asked about %d messages not in its table", miss)
	}
}

func ptrInt(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func decodeInto(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}
