package replay

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// Would is what the agent would have done with one message.
type Would struct {
	Route          string                `json:"route"`
	Decision       string                `json:"decision"`
	Classification *store.Classification `json:"classification,omitempty"`
	// Gates are the gates as last judged: on the draft when one was
	// written (--drafts), else with the output guard pending.
	Gates     []store.GateResult `json:"gates,omitempty"`
	Drafted   bool               `json:"drafted"`
	Draft     string             `json:"draft,omitempty"`
	NeedsIn   bool               `json:"needs_owner_input,omitempty"`
	Error     string             `json:"error,omitempty"`
	Calls     int                `json:"calls"`
	TokensIn  int64              `json:"tokens_in"`
	TokensOut int64              `json:"tokens_out"`
	// To is whom an auto-reply would go to: the authenticated sender
	// ("" when there is none; such mail is never auto-sent).
	To string `json:"to,omitempty"`
}

// Result is one replayed message: what the owner did and what the agent
// would have done.
type Result struct {
	Key       store.MessageKey `json:"key"`
	MessageID string           `json:"message_id"`
	From      string           `json:"from"`
	Subject   string           `json:"subject"`
	Date      time.Time        `json:"date"`
	// Arrived is the message's INTERNALDATE (when the server got it): the
	// order and the day the caps are simulated in.
	Arrived time.Time `json:"arrived,omitzero"`
	// FromOwner: From is one of the owner's addresses (the owner's own
	// mail, say a sent message moved to Trash, or a forgery of it).
	FromOwner bool  `json:"from_owner"`
	Truth     Truth `json:"truth"`
	Would     Would `json:"would"`
}

// Incoming reports whether r counts in the scores: mail from someone
// else (not from the owner's address, not mailagent's), that the model
// judged, or automated mail. Messages that need review are counted apart.
func (r *Result) Incoming() bool {
	return !r.FromOwner && r.Would.Route != agent.RouteOwner && r.Would.Route != agent.RouteSelf
}

// NeedsReply is the agent's verdict: it would have drafted a reply
// (auto_send or queue).
func (w *Would) NeedsReply() bool {
	return w.Decision == agent.DecisionAutoSend || w.Decision == agent.DecisionQueue
}

// AutoAt reports whether the message would have been sent automatically
// with policy.min_confidence = t and the rest of the policy as replayed:
// every gate other than classification passes (the output guard counts
// only once a draft was written; a draft that needs the owner's input
// never goes), and the classification gate passes at t.
func (w *Would) AutoAt(t float64) bool {
	c := w.Classification
	if w.Route != agent.RouteExternal || c == nil || w.Decision == agent.DecisionNeedsReview {
		return false
	}
	if c.Action != "reply" || c.Risk != "low" || c.RequiresApproval || c.Confidence < t {
		return false
	}
	if w.Drafted && (w.NeedsIn || w.Draft == "") {
		return false
	}
	if len(w.Gates) == 0 {
		return false
	}
	for _, g := range w.Gates {
		switch {
		case g.Gate == agent.GateClassification:
		case g.Gate == agent.GateOutput && !w.Drafted:
		case !g.Pass:
			return false
		}
	}
	return true
}

// VeryDifferent is the similarity below which an auto-sent draft counts as
// answering "very differently" from the owner's real reply.
const VeryDifferent = 0.10

// SimilarityMeasure names the draft-to-reply measure, for reports.
const SimilarityMeasure = "token-set Jaccard of lower-cased words (letters and digits), clean text (quotes and signature removed)"

// Similarity is the token-set Jaccard index of a and b: the share of
// distinct lower-cased words (runs of letters and digits) the two have in
// common, from 0 (none) to 1 (the same set). Two empty texts score 0.
// Its limits: word order, synonyms, negation and length are ignored, so a
// reply that says the opposite with the same words scores high and a
// paraphrase scores low; read it as "shares vocabulary", not "means the
// same".
func Similarity(a, b string) float64 {
	sa, sb := words(a), words(b)
	if len(sa) == 0 || len(sb) == 0 {
		return 0
	}
	inter := 0
	for w := range sa {
		if sb[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[f] = true
	}
	return out
}

// Confusion is "needs a reply" (the agent would draft one) against "the
// owner replied".
type Confusion struct {
	TP, FP, FN, TN int
	// Precision is TP/(TP+FP) and Recall TP/(TP+FN); -1 when undefined
	// (a zero denominator).
	Precision, Recall float64
}

// AutoSplit splits the would-be auto-sends by what the owner did.
type AutoSplit struct {
	Total int
	// AlsoAnswered: the owner replied too (with --drafts: a draft at
	// least VeryDifferent similar to the reply).
	AlsoAnswered int
	// AnsweredDifferently: the owner replied, and the draft's similarity
	// to the reply is below VeryDifferent (only with --drafts).
	AnsweredDifferently int
	// NeverAnswered: the owner never replied. The headline number: mail
	// the agent would have sent and the owner did not.
	NeverAnswered int
	// CapLimited is how many auto-sends the daily caps turned into queue
	// items (not in Total; see simulateCaps).
	CapLimited int
	// Compared is false without --drafts (AnsweredDifferently is then 0
	// and not measured).
	Compared bool
}

// DraftScore is the similarity of drafts to the owner's real replies,
// over the messages that have both.
type DraftScore struct {
	Compared int
	Mean     float64
	Median   float64
	Measure  string
}

// ThresholdRow is one min_confidence of the threshold table.
type ThresholdRow struct {
	MinConfidence float64
	AutoSends     int
	Unwanted      int // of which the owner never answered
	// CapLimited: would-be auto-sends at this min_confidence that the
	// daily caps queued instead (not in AutoSends).
	CapLimited int
}

// Thresholds are the min_confidence values of the table: 0.50 … 0.95.
func Thresholds() []float64 {
	var out []float64
	for i := 50; i <= 95; i += 5 {
		out = append(out, float64(i)/100)
	}
	return out
}

// AutoSent is one would-be auto-send, as the report lists it: unwanted
// (the owner never answered it) or, with drafts, answered very
// differently.
type AutoSent struct {
	Key        store.MessageKey
	From       string
	Subject    string
	Date       time.Time
	Confidence float64
	// Similarity is the draft's similarity to the owner's reply; -1 when
	// the owner never answered.
	Similarity float64
}

// Why says what the owner did instead, in words.
func (u AutoSent) Why() string {
	if u.Similarity < 0 {
		return "never answered"
	}
	return fmt.Sprintf("answered very differently (similarity %.2f)", u.Similarity)
}

// Report is the scored replay.
type Report struct {
	Messages    int // results scored
	Incoming    int // of which incoming (see Result.Incoming)
	NeedsReview int // the model failed on them; not in the scores
	Replied     int // incoming messages the owner replied to
	// MedianLatency is the median time to the owner's reply.
	MedianLatency time.Duration
	Flagged       int
	Unread        int
	Deleted       int
	Archived      int
	Decisions     map[string]int
	NeedsReply    Confusion
	Auto          AutoSplit
	Drafts        DraftScore
	Thresholds    []ThresholdRow
	Calls         int
	TokensIn      int64
	TokensOut     int64
	// Unwanted lists the auto-sends the owner never answered, newest
	// first: the auto-sends the owner would not have made (Auto.NeverAnswered
	// of them, and the threshold table's "unwanted").
	Unwanted []AutoSent
	// VeryDifferent lists the auto-sends the owner answered very
	// differently (with drafts only), newest first. They are not unwanted:
	// the owner did answer.
	VeryDifferent []AutoSent
	// MaxPerContactPerDay and MaxPerDay are the caps simulated.
	MaxPerContactPerDay, MaxPerDay int
}

// Score computes the report over results, with the daily caps of pol
// simulated over them in arrival order (see simulateCaps): an auto-send
// the caps refuse counts as the queue item it would have become.
func Score(results []*Result, pol agent.Policy) Report {
	rep := Report{Decisions: map[string]int{}, Drafts: DraftScore{Measure: SimilarityMeasure},
		MaxPerContactPerDay: pol.MaxPerContactPerDay, MaxPerDay: pol.MaxPerDay}
	var lat []time.Duration
	var sims []float64
	rows := Thresholds()
	rep.Thresholds = make([]ThresholdRow, len(rows))
	for i, t := range rows {
		rep.Thresholds[i].MinConfidence = t
	}
	capped, sentAt, refusedAt := simulateCaps(pol, results, rows)
	drafts := false
	for ri, r := range results {
		rep.Messages++
		rep.Calls += r.Would.Calls
		rep.TokensIn += r.Would.TokensIn
		rep.TokensOut += r.Would.TokensOut
		decision := r.Would.Decision
		if capped[ri] {
			decision = agent.DecisionQueue
		}
		rep.Decisions[decision]++
		if !r.Incoming() {
			continue
		}
		if r.Would.Decision == agent.DecisionNeedsReview {
			rep.NeedsReview++
			continue
		}
		rep.Incoming++
		tr := r.Truth
		if tr.Replied {
			rep.Replied++
			lat = append(lat, tr.Latency)
		}
		if tr.Flagged {
			rep.Flagged++
		}
		if !tr.Seen {
			rep.Unread++
		}
		if tr.Deleted {
			rep.Deleted++
		}
		if tr.Archived {
			rep.Archived++
		}
		need := r.Would.NeedsReply()
		switch {
		case need && tr.Replied:
			rep.NeedsReply.TP++
		case need:
			rep.NeedsReply.FP++
		case tr.Replied:
			rep.NeedsReply.FN++
		default:
			rep.NeedsReply.TN++
		}
		sim := -1.0
		if r.Would.Drafted {
			drafts = true
			if tr.Replied && r.Would.Draft != "" {
				sim = Similarity(r.Would.Draft, tr.ReplyText)
				sims = append(sims, sim)
			}
		}
		if capped[ri] {
			rep.Auto.CapLimited++
		}
		if decision == agent.DecisionAutoSend {
			rep.Auto.Total++
			u := AutoSent{Key: r.Key, From: r.From, Subject: r.Subject, Date: r.Date, Similarity: sim}
			if c := r.Would.Classification; c != nil {
				u.Confidence = c.Confidence
			}
			switch {
			case !tr.Replied:
				rep.Auto.NeverAnswered++
				u.Similarity = -1
				rep.Unwanted = append(rep.Unwanted, u)
			case sim >= 0 && sim < VeryDifferent:
				rep.Auto.AnsweredDifferently++
				rep.VeryDifferent = append(rep.VeryDifferent, u)
			default:
				rep.Auto.AlsoAnswered++
			}
		}
		for i := range rows {
			switch {
			case sentAt[i][ri]:
				rep.Thresholds[i].AutoSends++
				if !tr.Replied {
					rep.Thresholds[i].Unwanted++
				}
			case refusedAt[i][ri]:
				rep.Thresholds[i].CapLimited++
			}
		}
	}
	rep.Auto.Compared = drafts
	newestFirst := func(a, b AutoSent) int { return b.Date.Compare(a.Date) }
	slices.SortStableFunc(rep.Unwanted, newestFirst)
	slices.SortStableFunc(rep.VeryDifferent, newestFirst)
	rep.NeedsReply.Precision = ratio(rep.NeedsReply.TP, rep.NeedsReply.TP+rep.NeedsReply.FP)
	rep.NeedsReply.Recall = ratio(rep.NeedsReply.TP, rep.NeedsReply.TP+rep.NeedsReply.FN)
	if len(lat) > 0 {
		slices.Sort(lat)
		rep.MedianLatency = medianDur(lat)
	}
	if n := len(sims); n > 0 {
		rep.Drafts.Compared = n
		sum := 0.0
		for _, s := range sims {
			sum += s
		}
		rep.Drafts.Mean = sum / float64(n)
		slices.Sort(sims)
		if n%2 == 1 {
			rep.Drafts.Median = sims[n/2]
		} else {
			rep.Drafts.Median = (sims[n/2-1] + sims[n/2]) / 2
		}
	}
	return rep
}

func medianDur(d []time.Duration) time.Duration {
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return (d[n/2-1] + d[n/2]) / 2
}

func ratio(a, b int) float64 {
	if b == 0 {
		return -1
	}
	return math.Round(float64(a)/float64(b)*10000) / 10000
}
