package compose

import (
	"fmt"
	"strings"

	"github.com/mailagent/mailagent/internal/mail"
)

// Recipients picks who a reply to parent goes to. It is deterministic and
// depends only on the parent's headers and the owner's addresses:
//
//   - to is every valid Reply-To address of the parent, or when there is no
//     usable Reply-To address, the parent's From;
//   - with replyAll, the parent's To addresses are added to to, and its Cc
//     addresses form cc;
//   - owner addresses (the account and its aliases, compared
//     case-insensitively) are never included, nor are empty or malformed
//     addresses, nor duplicates (an address appears once, in to before cc);
//   - display names are reduced to one line, and dropped when they contain
//     an '@'.
//
// It returns an error wrapping ErrNoRecipient when nobody remains (for
// example, the owner wrote to themselves).
func Recipients(parent *mail.Message, owner []string, replyAll bool) (to, cc []mail.Address, err error) {
	if parent == nil {
		return nil, nil, fmt.Errorf("reply recipients: no parent message: %w", ErrNoRecipient)
	}
	excluded := make(map[string]bool, len(owner))
	for _, o := range owner {
		if k := addrKey(o); k != "" {
			excluded[k] = true
		}
	}
	seen := map[string]bool{}
	add := func(list []mail.Address, a mail.Address) []mail.Address {
		email := strings.TrimSpace(a.Email)
		k := addrKey(email)
		if !validEmail(email) || excluded[k] || seen[k] {
			return list
		}
		seen[k] = true
		return append(list, mail.Address{Name: cleanName(a.Name), Email: email})
	}

	for _, a := range parent.ReplyTo {
		to = add(to, a)
	}
	if len(to) == 0 {
		to = add(to, parent.From)
	}
	if replyAll {
		for _, a := range parent.To {
			to = add(to, a)
		}
		for _, a := range parent.Cc {
			cc = add(cc, a)
		}
	}
	if len(to) == 0 {
		if len(cc) == 0 {
			return nil, nil, fmt.Errorf("reply recipients for %q: %w", parent.MessageID, ErrNoRecipient)
		}
		// Only Cc addresses remain: promote them so the reply has a To.
		to, cc = cc, nil
	}
	return to, cc, nil
}

// NewReply fills a Reply to parent: recipients from Recipients, the parent's
// subject and threading ids (a synthesized parent id is not used), and from
// as the sender. The caller sets Body, Footer, AutoSubmitted and
// ExtraHeaders, and may set Date and MessageID.
func NewReply(parent *mail.Message, from mail.Address, owner []string, replyAll bool) (Reply, error) {
	to, cc, err := Recipients(parent, owner, replyAll)
	if err != nil {
		return Reply{}, err
	}
	r := Reply{
		From:             from,
		To:               to,
		Cc:               cc,
		Subject:          parent.Subject,
		ParentReferences: parent.References,
		ParentInReplyTo:  parent.InReplyTo,
	}
	if !parent.Synthesized {
		r.ParentMessageID = parent.MessageID
	}
	return r, nil
}

// addrKey is the comparison key of an address: trimmed and case-folded.
func addrKey(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}
