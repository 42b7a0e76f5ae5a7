package prompts

// StyleData is the input of the style-distillation prompt. Edits are the
// owner's corrections (what a draft said and what the owner sent), fenced.
type StyleData struct {
	Owner    Owner
	Boundary string
	Edits    []string
	MaxRules int
}

// Style renders the prompt that distills global style rules from the
// owner's edits. The answer is expected to match {"rules": [string]}.
func (s *Set) Style(d StyleData) (system, user string, err error) {
	if err := checkBoundary(d.Boundary); err != nil {
		return "", "", err
	}
	return s.render(styleFile, sanitize(d, d.Boundary))
}

// Owner-loop modes (OwnerData.Mode).
const (
	ModeInstruction = "instruction" // mail to the agent: turn it into records
	ModeObserve     = "observe"     // the agent in Cc: learn, never send
	ModeContext     = "context"     // a reply to the agent in a correspondent's thread
	ModeDelegate    = "delegate"    // a forward to the agent: draft a reply, queued
)

// OwnerData is the input of one turn of the owner loop. Mode, Today,
// Contacts and Steps are written by code; the mail fields are fenced.
type OwnerData struct {
	Owner    Owner
	Boundary string
	Mode     string
	Today    string
	// Contacts are the addresses records may name (the mail's other
	// recipients, the thread's correspondent, the forwarded sender).
	Contacts []string
	// Steps are the results of the earlier calls of this loop.
	Steps             []string
	From, To, Subject string
	Text              string
}

// OwnerTurn renders one turn of the owner loop.
func (s *Set) OwnerTurn(d OwnerData) (system, user string, err error) {
	if err := checkBoundary(d.Boundary); err != nil {
		return "", "", err
	}
	return s.render(ownerFile, sanitize(d, d.Boundary))
}
