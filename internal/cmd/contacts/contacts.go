// Package contacts is `mailagent contacts`: what mailagent remembers about
// each correspondent (list, show, forget, note). Its tests are in
// internal/cmd/root (contacts_test.go), whose test binary holds every
// command's tests.
package contacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/humantime"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/prompter"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// ContactsOptions are the flags of the contacts subcommands.
type ContactsOptions struct {
	IO      *iostreams.IOStreams
	Config  func() (*config.Config, error)
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	Now     func() time.Time
	// Prompter asks forget's y/N question.
	Prompter func() prompter.Prompter

	Action  string // list | show | forget | note
	Email   string
	Account string
	JSON    bool
	Note    string
	Yes     bool // forget: without asking (needed when stdin is not a terminal)
}

// NewCmdContacts is `mailagent contacts` and its verbs (list, show, forget,
// note); runF, when not nil, runs instead of contactsRun.
func NewCmdContacts(f *cmdutil.Factory, runF func(context.Context, *ContactsOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "contacts",
		Short: "What mailagent remembers about each correspondent",
		Long: `Each contact has a bounded history, a rolling summary, your notes and
counts; what was learned about it (notes, corrections, examples) is in
` + "`mailagent memory list --contact EMAIL`" + `. A prompt only ever contains the
memory of the message's own contact. note adds a fact record about the
contact; forget deletes the contact and everything learned about exactly
that address (its records and examples).`,
	}
	mk := func(use, short string, args cobra.PositionalArgs, json bool) *cobra.Command {
		opts := &ContactsOptions{IO: f.IOStreams, Config: f.Config, Now: f.Now, Prompter: f.Prompter, Action: strings.Fields(use)[0]}
		c := &cobra.Command{Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					opts.Email = args[0]
				}
				if len(args) > 1 {
					opts.Note = args[1]
				}
				opts.Service = f.Service
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return contactsRun(cmd.Context(), opts)
			}}
		c.Flags().StringVar(&opts.Account, "account", "", "account (default: the only one, or the first)")
		if json {
			c.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
		}
		if opts.Action == "forget" {
			c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "forget without asking (needed when stdin is not a terminal)")
		}
		return c
	}
	cmd.AddCommand(
		mk("list", "List contacts", cobra.NoArgs, true),
		mk("show EMAIL", "Show one contact's memory", cobra.ExactArgs(1), true),
		mk("forget EMAIL", "Delete one contact's memory", cobra.ExactArgs(1), false),
		mk("note EMAIL TEXT", "Add a context note for drafts to this contact", cobra.ExactArgs(2), false),
	)
	return cmd
}

func contactsRun(ctx context.Context, opts *ContactsOptions) error {
	account, svc, closeSvc, err := cmdutil.AccountService(ctx, opts.Config, opts.Service, opts.Account)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	switch opts.Action {
	case "list":
		cs, err := svc.Contacts(ctx, account)
		if err != nil {
			return err
		}
		if opts.JSON {
			return cmdutil.WriteJSON(opts.IO.Out, view.ToContactsJSON(account, cs))
		}
		PrintContacts(opts.IO.Out, cs, opts.Now())
	case "show":
		c, err := svc.Contact(ctx, account, opts.Email)
		if errors.Is(err, store.ErrNotFound) {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no contact %s in account %s", opts.Email, account)}
		}
		if err != nil {
			return err
		}
		if opts.JSON {
			return cmdutil.WriteJSON(opts.IO.Out, view.ToContactJSON(account, c))
		}
		printContact(opts.IO.Out, c)
	case "forget":
		if err := confirmForget(ctx, svc, account, opts); err != nil {
			return err
		}
		if err := svc.ForgetContact(ctx, account, opts.Email); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no contact %s in account %s", opts.Email, account)}
			}
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "forgot %s\n", opts.Email)
	case "note":
		// A note is a fact record about the contact, so it is listed,
		// edited and forgotten on its own (`mailagent memory`).
		r, err := svc.AddMemory(ctx, store.MemoryRecord{Account: account, Kind: store.MemoryFact, Contact: opts.Email, Text: opts.Note})
		if errors.Is(err, api.ErrBadRequest) {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "noted for %s as %s (`mailagent memory forget %s` removes it)\n", termsafe.Line(opts.Email), r.ID, r.ID)
	}
	return nil
}

// PrintContacts writes the human table, names and addresses sanitised
// before the table pads them.
func PrintContacts(w io.Writer, cs []store.Contact, now time.Time) {
	if len(cs) == 0 {
		fmt.Fprintln(w, "no contacts yet")
		return
	}
	var tb cmdutil.Table
	tb.Row("EMAIL", "NAME", "KNOWN", "IN", "OUT", "AUTO", "LAST SEEN")
	for _, c := range cs {
		tb.Row(termsafe.Line(c.Email), contactName(c.Name), strconv.FormatBool(c.Known), strconv.Itoa(c.Inbound),
			strconv.Itoa(c.Outbound), strconv.Itoa(c.AutoReplies), humantime.Age(now, c.LastSeen))
	}
	_ = tb.Write(w)
}

// contactName is a contact's display name, sanitised and truncated; a name
// that looks like an address is quoted and marked, so it cannot be read as
// the contact's address.
func contactName(name string) string {
	n := cmdutil.Truncate(termsafe.Line(name), 40)
	if termsafe.LooksLikeAddress(n) {
		return strconv.Quote(n) + " (name looks like an address)"
	}
	return n
}

func printContact(w io.Writer, c *store.Contact) {
	line := termsafe.Line
	fmt.Fprintf(w, "%s %s\nknown %v; first seen %s, last seen %s\n", line(c.Email), contactName(c.Name), c.Known,
		c.FirstSeen.Format(time.DateOnly), c.LastSeen.Format(time.DateOnly))
	fmt.Fprintf(w, "%d in, %d out (%d by you, %d automatic)\n", c.Inbound, c.Outbound, c.OwnerReplies, c.AutoReplies)
	if c.Summary != "" {
		fmt.Fprintf(w, "\nsummary: %s\n", line(c.Summary))
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", line(n))
	}
	if len(c.History) > 0 {
		fmt.Fprintln(w, "\nhistory:")
		for _, h := range c.History {
			fmt.Fprintf(w, "  %s %-3s %s: %s\n", h.Date.Format(time.DateOnly), line(h.Direction), line(h.Subject), line(h.Summary))
		}
	}
}
