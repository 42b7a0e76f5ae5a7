package imapsync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// EnsureOptions say which folder EnsureFolder finds or creates.
type EnsureOptions struct {
	// Attr is the special-use attribute (`\Sent`, `\Drafts`); it is asked
	// for in LIST and given to CREATE where the server allows it.
	Attr string
	// Configured is the folder name the owner configured ("" for none):
	// it wins over Attr, as everywhere mailagent looks for the folder.
	Configured string
	// Incoming reports a folder mailagent reads as incoming mail (the
	// watched mailbox): such a folder is never used nor offered as Drafts
	// or Sent, whatever the server marks it with. nil: none.
	Incoming func(name string) bool
}

// ErrIncomingFolder means the folder found for Drafts or Sent is one
// mailagent reads as incoming mail (see IncomingFolderError).
var ErrIncomingFolder = errors.New("imap: the folder is read as incoming mail")

// IncomingFolderError is a Drafts or Sent folder that is one mailagent
// reads as incoming mail: its drafts would come back as new mail and be
// taken for the owner's replies. It matches ErrIncomingFolder and
// ErrSetupNeeded.
type IncomingFolderError struct {
	Attr string // `\Sent`, `\Drafts`; "" for a configured name
	Name string // the folder the server or the configuration gave
}

func (e *IncomingFolderError) Error() string {
	return fmt.Sprintf("imap %s folder %q: %v", useName(e.Attr), e.Name, ErrIncomingFolder)
}

// Is makes errors.Is match ErrIncomingFolder and ErrSetupNeeded.
func (e *IncomingFolderError) Is(target error) bool {
	return target == ErrIncomingFolder || target == ErrSetupNeeded
}

// SetupFix names the fix: another folder for that use.
func (e *IncomingFolderError) SetupFix() string {
	key := map[string]string{`\sent`: "sent_mailbox", `\drafts`: "drafts_mailbox"}[strings.ToLower(e.Attr)]
	if key == "" {
		key = "sent_mailbox or drafts_mailbox"
	}
	return fmt.Sprintf("set accounts.%s to a folder that is not the watched mailbox (%q is read as incoming mail)", key, e.Name)
}

// EnsureFolder returns the account's folder for o (see FindSpecialUse),
// creating it when it is missing: under the server's personal namespace
// prefix and separator (Courier-IMAP's "INBOX.Sent"), with
// `CREATE name (USE (\Sent))` (RFC 6154) where the server announces
// CREATE-SPECIAL-USE, else (or when the server refuses the attribute) a
// plain CREATE. The new folder is subscribed, as mail clients expect;
// a refused SUBSCRIBE is not an error. created tells whether it was made
// now. A folder that o.Incoming claims is refused with ErrIncomingFolder.
func (c *Client) EnsureFolder(ctx context.Context, o EnsureOptions) (name string, created bool, err error) {
	attr, names := o.Attr, []string(nil)
	if o.Configured != "" {
		attr, names = "", []string{o.Configured}
	}
	got, err := c.FindSpecialUse(ctx, attr, names...)
	if err == nil {
		if o.Incoming != nil && o.Incoming(got) {
			return "", false, &IncomingFolderError{Attr: o.Attr, Name: got}
		}
		return got, false, nil
	}
	var nf *NoMailboxError
	if !errors.As(err, &nf) {
		return "", false, err
	}
	name = nf.Create
	if name == "" {
		name = strings.TrimPrefix(o.Attr, `\`)
	}
	if o.Incoming != nil && o.Incoming(name) {
		return "", false, &IncomingFolderError{Attr: o.Attr, Name: name}
	}
	if err := c.create(ctx, name, o.Attr); err != nil {
		return "", false, err
	}
	_ = c.guard(ctx, func() error { return c.ic.Subscribe(name).Wait() })
	return name, true, nil
}

// create runs CREATE, with the special-use attribute when the server
// takes it.
func (c *Client) create(ctx context.Context, name, attr string) error {
	if attr != "" && c.Has(string(imap.CapCreateSpecialUse)) {
		opts := &imap.CreateOptions{SpecialUse: []imap.MailboxAttr{imap.MailboxAttr(attr)}}
		err := c.guard(ctx, func() error { return c.ic.Create(name, opts).Wait() })
		if err == nil || ctx.Err() != nil {
			return createErr(name, err)
		}
		// A server may refuse a second folder with the same use
		// ([USEATTR]); the folder is still found by its name.
	}
	return createErr(name, c.guard(ctx, func() error { return c.ic.Create(name, nil).Wait() }))
}

func createErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("imap create %q: %w", name, err)
}

func useName(attr string) string {
	if attr == "" {
		return "configured"
	}
	return strings.TrimPrefix(attr, `\`)
}
