package owner

import (
	netmail "net/mail"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

var forwardSubject = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\s*(fwd?|wg|tr|rv)\s*:`) })

// Mode sorts an owner message: "" when it is not for the agent, and
// the addresses records may name. For a delegation, dels are the
// forwarded originals (forward.go); notes say what forwarded
// content could not be delegated, whatever the mode.
func (c *Channel) Mode(rec *store.MessageRecord, body string, fwds []mail.Forward) (mode string, contacts []string, dels []Forwarded, notes []string) {
	toAgent, toSelf := false, false
	var others []string
	for _, a := range append(slices.Clone(rec.To), rec.Cc...) {
		e := mail.AddrKey(a.Email)
		switch {
		case c.Accounts.IsAgentAddress(rec.Account, e):
			toAgent = true
		case c.Accounts.IsOwner(rec.Account, e):
			toSelf = true
		case e != "" && !slices.Contains(others, e):
			others = append(others, e)
		}
	}
	if len(others) > 0 {
		if toAgent {
			return prompts.ModeObserve, others, nil, nil
		}
		return "", nil, nil, nil // the owner's ordinary mail, perhaps with a copy to themselves
	}
	if !toAgent && !toSelf {
		return "", nil, nil, nil
	}
	if dels, notes = c.delegations(rec, body, fwds); len(dels) > 0 {
		for _, d := range dels {
			if e := mail.AddrKey(d.From.Email); !slices.Contains(contacts, e) {
				contacts = append(contacts, e)
			}
		}
		return prompts.ModeDelegate, contacts, dels, notes
	}
	if who := c.threadCorrespondent(rec); who != "" {
		return prompts.ModeContext, []string{who}, nil, notes
	}
	return prompts.ModeInstruction, addressesIn(body), nil, notes
}

// threadCorrespondent is the authenticated external sender of the thread
// rec replies to, or "".
func (c *Channel) threadCorrespondent(rec *store.MessageRecord) string {
	if len(rec.InReplyTo) == 0 || rec.ThreadID == "" {
		return ""
	}
	recs, err := c.Store.ThreadMessages(rec.ThreadID, 0)
	if err != nil {
		return ""
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.External() {
			if id := r.SenderAuth.Identity(); id != "" {
				return mail.AddrKey(id)
			}
		}
	}
	return ""
}

var addrPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`) })

func addressesIn(s string) []string {
	var out []string
	for _, a := range addrPattern().FindAllString(s, 20) {
		if a = mail.AddrKey(a); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Forwarded is the original message inside an inline forward, or an
// attached one (forward.go).
type Forwarded struct {
	From      mail.Address
	Subject   string
	MessageID string
	Body      string
	// Of an attached original only: its thread ids, date and Reply-To
	// (shown, never a recipient), its part, and what was wrong with it.
	InReplyTo, References []string
	ReplyTo               []mail.Address
	Date                  time.Time
	Part                  string
	Attached              bool
	Problems              []string
	// Index is the original's position among the message's delegations
	// (its record and queue item: DelegatedKey).
	Index int
}

var forwardLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?im)^\s*(-{2,}\s*(forwarded message|original message|weitergeleitete nachricht)\s*-*|begin forwarded message:)\s*$`)
})

// forwardedBlock is the text from the first forward marker on, or "".
func forwardedBlock(body string) string {
	loc := forwardLine().FindStringIndex(body)
	if loc == nil {
		return ""
	}
	return body[loc[1]:]
}

// parseForwarded reads the header lines (From, Subject, Message-ID) that
// clients put at the top of an inline forward, and the text after them.
func parseForwarded(body string) Forwarded {
	var fw Forwarded
	block := strings.TrimLeft(forwardedBlock(body), "\r\n")
	lines := strings.Split(block, "\n")
	i := 0
	for ; i < len(lines); i++ {
		l := strings.TrimSpace(strings.TrimPrefix(lines[i], ">"))
		if l == "" {
			break
		}
		name, val, ok := strings.Cut(l, ":")
		if !ok {
			break
		}
		val = strings.TrimSpace(val)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "from", "von", "de":
			if a, err := netmail.ParseAddress(val); err == nil {
				fw.From = mail.Address{Name: a.Name, Email: a.Address}
			} else if as := addressesIn(val); len(as) > 0 {
				fw.From = mail.Address{Email: as[0]}
			}
		case "subject", "betreff", "objet", "asunto":
			fw.Subject = val
		case "message-id":
			fw.MessageID = strings.Trim(val, "<> ")
		}
	}
	if i < len(lines) {
		fw.Body = strings.TrimSpace(strings.Join(lines[i:], "\n"))
	}
	return fw
}

// ForwardSubject is subject without its forward prefix ("Fwd:", "WG:",
// "TR:", "RV:"): the subject of a forwarded original that named none.
func ForwardSubject(subject string) string {
	return strings.TrimSpace(forwardSubject().ReplaceAllString(subject, ""))
}
