package imapsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// commonNames are the folder names clients create for Sent and Drafts
// when the server marks none with SPECIAL-USE, most common first.
var commonNames = map[string][]string{
	`\sent`:    {"Sent", "Sent Items", "Sent Messages", "Sent Mail", "Sent-Mail", "Gesendet", "Envoyés", "Enviados", "Posta inviata"},
	`\drafts`:  {"Drafts", "Draft", "Entwürfe", "Brouillons", "Borradores", "Bozze"},
	`\trash`:   {"Trash", "Deleted Items", "Deleted Messages"},
	`\junk`:    {"Junk", "Spam", "Junk E-mail"},
	`\archive`: {"Archive", "Archives"},
}

// CommonNames returns the folder names tried for a special-use attribute
// (`\Sent`, `\Drafts`, …) on a server that does not mark its folders. The
// slice is a copy.
func CommonNames(attr string) []string {
	return slices.Clone(commonNames[strings.ToLower(attr)])
}

// NoMailboxError says which folder could not be found, what was tried,
// and which folders the server has. It matches ErrNoMailbox.
type NoMailboxError struct {
	Attr  string   // the special-use attribute asked for; "" for a name alone
	Tried []string // the names tried, as looked up
	// Existing lists the server's selectable folders, for a message that
	// lets the owner pick one.
	Existing []string
	// Create is the name to create for the first wanted name: it carries
	// the server's personal namespace prefix (e.g. "INBOX.Sent" on
	// Courier-IMAP, which refuses a top-level "Sent").
	Create string
}

func (e *NoMailboxError) Error() string {
	what := e.Attr
	if what == "" && len(e.Tried) > 0 {
		what = fmt.Sprintf("%q", e.Tried[0])
	}
	return fmt.Sprintf("imap find %s mailbox: %v (tried %s; the server has %s)", what, ErrNoMailbox,
		quoteList(e.Tried), quoteList(e.Existing))
}

// Is makes errors.Is(err, ErrNoMailbox) true, and errors.Is(err,
// ErrSetupNeeded) for a folder `mailagent doctor --fix` creates: Sent,
// Drafts, or a configured name (Attr "").
func (e *NoMailboxError) Is(target error) bool {
	switch target {
	case ErrNoMailbox:
		return true
	case ErrSetupNeeded:
		a := strings.ToLower(e.Attr)
		return a == "" || a == `\sent` || a == `\drafts`
	}
	return false
}

// SetupFix names what makes the folder exist: `mailagent doctor --fix`,
// which creates it, or the key that names an existing one ("" for a
// folder doctor --fix does not create, such as Archive).
func (e *NoMailboxError) SetupFix() string {
	if !e.Is(ErrSetupNeeded) {
		return "" // not a folder doctor --fix creates
	}
	create := e.Create
	if create == "" && len(e.Tried) > 0 {
		create = e.Tried[0]
	}
	key := map[string]string{`\sent`: "sent_mailbox", `\drafts`: "drafts_mailbox"}[strings.ToLower(e.Attr)]
	fix := fmt.Sprintf("run `mailagent doctor --fix` to create %q", create)
	if key != "" {
		fix += fmt.Sprintf(", or set accounts.%s to an existing folder that is not the watched mailbox", key)
	}
	return fix
}

// ErrSetupNeeded means the account lacks something only its owner (or
// `mailagent doctor --fix`) can set up, such as a Sent or Drafts folder.
// Errors that match it have a SetupFix() string method naming the fix
// (the local API carries that method across its socket).
var ErrSetupNeeded = errors.New("imap: the account needs setting up")

func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Namespace returns the personal namespace's prefix and hierarchy
// separator (RFC 2342): "" and '/' on most servers, "INBOX." and '.' on
// Courier-IMAP and servers laid out like it. Without NAMESPACE support the
// prefix is "" and the separator is the one LIST reports for INBOX (0
// when unknown).
func (c *Client) Namespace(ctx context.Context) (prefix string, delim rune, err error) {
	if c.Has(string(imap.CapNamespace)) {
		var data *imap.NamespaceData
		err := c.guard(ctx, func() error {
			var err error
			data, err = c.ic.Namespace().Wait()
			return err
		})
		if err == nil && data != nil && len(data.Personal) > 0 {
			return data.Personal[0].Prefix, data.Personal[0].Delim, nil
		}
		if ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
	}
	var list []*imap.ListData
	err = c.guard(ctx, func() error {
		var err error
		list, err = c.ic.List("", "INBOX", nil).Collect()
		return err
	})
	if err != nil {
		return "", 0, fmt.Errorf("imap list: %w", err)
	}
	for _, mb := range list {
		return "", mb.Delim, nil
	}
	return "", 0, nil
}

// FindSpecialUse returns the mailbox carrying the special-use attribute
// attr (e.g. `\Sent`, `\Drafts`), asking with LIST RETURN (SPECIAL-USE)
// when the server supports it. Failing that (attr "" skips this step) it
// returns the first existing mailbox whose name matches one of fallbacks,
// case-insensitively, in the order given; each name is also tried under
// the personal namespace prefix and under INBOX with the server's
// separator, so "Sent" finds "INBOX.Sent" on a Courier-style server. With
// no fallbacks, CommonNames(attr) are tried.
//
// When nothing matches the error is a *NoMailboxError (errors.Is
// ErrNoMailbox) listing the server's folders.
func (c *Client) FindSpecialUse(ctx context.Context, attr string, fallbacks ...string) (string, error) {
	var opts *imap.ListOptions
	if c.Has(string(imap.CapSpecialUse)) {
		opts = &imap.ListOptions{ReturnSpecialUse: true}
	}
	var list []*imap.ListData
	err := c.guard(ctx, func() error {
		var err error
		list, err = c.ic.List("", "*", opts).Collect()
		return err
	})
	if err != nil {
		return "", fmt.Errorf("imap list: %w", err)
	}
	if attr != "" {
		for _, mb := range list {
			for _, a := range mb.Attrs {
				if strings.EqualFold(string(a), attr) {
					return mb.Mailbox, nil
				}
			}
		}
	}
	if len(fallbacks) == 0 {
		fallbacks = CommonNames(attr)
	}
	prefix, delim, err := c.Namespace(ctx)
	if err != nil {
		return "", err
	}
	if delim == 0 {
		for _, mb := range list {
			if mb.Delim != 0 {
				delim = mb.Delim
				break
			}
		}
	}
	var tried []string
	for _, name := range fallbacks {
		for _, cand := range folderCandidates(name, prefix, delim) {
			if !slices.Contains(tried, cand) {
				tried = append(tried, cand)
			}
			for _, mb := range list {
				if strings.EqualFold(mb.Mailbox, cand) && !noSelect(mb) {
					return mb.Mailbox, nil
				}
			}
		}
	}
	nf := &NoMailboxError{Attr: attr, Tried: tried}
	for _, mb := range list {
		if !noSelect(mb) {
			nf.Existing = append(nf.Existing, mb.Mailbox)
		}
	}
	if len(fallbacks) > 0 {
		nf.Create = fallbacks[0]
		if prefix != "" && !hasPrefixFold(nf.Create, prefix) {
			nf.Create = prefix + nf.Create
		}
	}
	return "", nf
}

// folderCandidates are the full names under which a folder called name
// may exist: as given, under the personal namespace prefix, and under
// INBOX (Courier-IMAP's layout, also on servers that do not announce it).
func folderCandidates(name, prefix string, delim rune) []string {
	out := []string{name}
	if prefix != "" && !hasPrefixFold(name, prefix) {
		out = append(out, prefix+name)
	}
	if delim != 0 {
		inbox := "INBOX" + string(delim)
		if !hasPrefixFold(name, inbox) && !slices.ContainsFunc(out, func(s string) bool { return strings.EqualFold(s, inbox+name) }) {
			out = append(out, inbox+name)
		}
	}
	return out
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func noSelect(mb *imap.ListData) bool {
	for _, a := range mb.Attrs {
		if a == imap.MailboxAttrNoSelect || a == imap.MailboxAttrNonExistent {
			return true
		}
	}
	return false
}
