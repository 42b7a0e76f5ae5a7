package replay

import (
	"cmp"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// The daily caps (policy.max_per_contact_per_day, policy.max_per_day) are
// simulated after the run, over the results in arrival order: each
// would-be auto-send asks the caps gate (agent.EvaluateGates, the code the
// pipeline runs) with the counts of a ledger kept in memory, and counts in
// it only when the gate lets it through, as the real pipeline counts in
// the store (agent's act step, store.IncrAutoSend) only what it sends. A
// send the caps refuse is a queue item instead. The ledger is keyed as the
// store's: per account, recipient and UTC day, and per day across
// accounts. It never reads the agent's store: its caps are today's, not
// those of the replayed days.
//
// Doing it after the run, not during it, keeps the run concurrent and
// resumable (the results do not depend on the order the workers finished
// in) and lets the threshold table run the same ledger for every
// min_confidence.

// ledger is the simulated auto-send counts.
type ledger struct {
	pol        agent.Policy
	perContact map[string]int
	perDay     map[string]int
	// verdicts memoizes the caps gate's pass by (per contact, in all)
	// count: the gate is a pure function of those and the policy (the
	// recipient only names who in its reason), and it formats every
	// gate's reason, which the table's ten ledgers would pay per message.
	verdicts map[[2]int]bool
}

func newLedger(pol agent.Policy, verdicts map[[2]int]bool) *ledger {
	return &ledger{pol: pol, perContact: map[string]int{}, perDay: map[string]int{}, verdicts: verdicts}
}

// capsKey is where one message counts: its recipient, per account and
// UTC day (the store's keys), and its day.
type capsKey struct{ to, contact, day string }

func capsKeyOf(r *Result) capsKey {
	day := store.Day(r.arrived())
	to := mail.AddrKey(r.recipient())
	return capsKey{to: to, contact: day + "\x00" + r.Key.Account + "\x00" + to, day: day}
}

// send asks the caps gate whether a message counted at k may be
// auto-sent now and, if so, counts it.
func (l *ledger) send(k capsKey) bool {
	counts := [2]int{l.perContact[k.contact], l.perDay[k.day]}
	pass, ok := l.verdicts[counts]
	if !ok {
		pass = capsGate(l.pol, k.to, counts[0], counts[1]).Pass
		l.verdicts[counts] = pass
	}
	if pass {
		l.perContact[k.contact]++
		l.perDay[k.day]++
	}
	return pass
}

// capsGate is the pipeline's caps gate for an auto-reply to to, given the
// auto-sends already made that day to to (perContact) and in all
// (global): the verdict of agent.EvaluateGates, whose other gates are
// not asked here.
func capsGate(pol agent.Policy, to string, perContact, global int) store.GateResult {
	in := agent.GateInput{Recipients: []agent.Recipient{{Email: mail.AddrKey(to), Known: true, SentToday: perContact}}, SentToday: global}
	for _, g := range agent.EvaluateGates(pol, in) {
		if g.Gate == agent.GateCaps {
			return g
		}
	}
	// EvaluateGates always judges the caps; a policy without them fails closed.
	return store.GateResult{Gate: agent.GateCaps, Reason: "the caps gate was not evaluated"}
}

// arrived is when the message reached the mailbox (INTERNALDATE): the
// server's time, which the sender cannot set. Results written before it
// was recorded fall back to the Date header.
func (r *Result) arrived() time.Time {
	if !r.Arrived.IsZero() {
		return r.Arrived
	}
	return r.Date
}

// recipient is whom an auto-reply to r goes to: the authenticated sender
// (the recipients gate lets nothing else through).
func (r *Result) recipient() string {
	if r.Would.To != "" {
		return r.Would.To
	}
	return r.From
}

// byArrival returns the indexes of results in arrival order (ties by
// message key, so the order never depends on how the run went).
func byArrival(results []*Result) []int {
	idx := make([]int, len(results))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ra, rb := results[a], results[b]
		return cmp.Or(ra.arrived().Compare(rb.arrived()),
			cmp.Compare(ra.Key.Account, rb.Key.Account), cmp.Compare(ra.Key.Mailbox, rb.Key.Mailbox),
			cmp.Compare(ra.Key.UIDValidity, rb.Key.UIDValidity), cmp.Compare(ra.Key.UID, rb.Key.UID))
	})
	return idx
}

// simulateCaps simulates the caps over results: for the policy's own
// decisions (the result's auto_send) and for each threshold of rows
// (AutoAt). It returns, by result index, the policy's auto-sends the caps
// refused (capped), and per row the messages sent (sent) and refused
// (refused) at that min_confidence.
func simulateCaps(pol agent.Policy, results []*Result, rows []float64) (capped []bool, sent, refused [][]bool) {
	order := byArrival(results)
	keys := make([]capsKey, len(results))
	for i, r := range results {
		keys[i] = capsKeyOf(r)
	}
	verdicts := map[[2]int]bool{}
	capped = make([]bool, len(results))
	l := newLedger(pol, verdicts)
	for _, i := range order {
		if results[i].Would.Decision == agent.DecisionAutoSend && !l.send(keys[i]) {
			capped[i] = true
		}
	}
	sent, refused = make([][]bool, len(rows)), make([][]bool, len(rows))
	for j, t := range rows {
		sent[j], refused[j] = make([]bool, len(results)), make([]bool, len(results))
		l := newLedger(pol, verdicts)
		for _, i := range order {
			if !results[i].Would.AutoAt(t) {
				continue
			}
			if l.send(keys[i]) {
				sent[j][i] = true
			} else {
				refused[j][i] = true
			}
		}
	}
	return capped, sent, refused
}
