// Package memory is `mailagent memory`: what mailagent has learned,
// record by record (list, show, forget, add, edit). Its tests are in
// internal/cmd/root (memory_test.go), whose test binary holds every
// command's tests.
package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/humantime"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// MemoryOptions are the flags of the memory subcommands.
type MemoryOptions struct {
	IO      *iostreams.IOStreams
	Config  func() (*config.Config, error)
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	Now     func() time.Time

	Action  string // list | show | forget | add | edit
	ID      string
	Account string
	Contact string
	Kind    string
	Expires string // add: YYYY-MM-DD, the last day a temporary record applies
	Text    string
	JSON    bool
}

// NewCmdMemory is `mailagent memory` and its verbs (list, show, forget, add,
// edit); runF, when not nil, runs instead of memoryRun.
func NewCmdMemory(f *cmdutil.Factory, runF func(context.Context, *MemoryOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "What mailagent has learned, record by record",
		Long: `Memory records are typed (fact, preference, rule, style, temporary) and
carry their source: an edit or rejection in the queue (edit:q_…, reject:q_…),
the owner's mail to the agent (mail:<message-id>), style distilled from
edits (distilled:…), or manual. Records about a contact are only used in
drafts to that contact (or, with @domain, to that domain); records without
a contact, and style records, apply to every draft. Drafts get them within
a token budget, newest first.`,
	}
	mk := func(use, short string, args cobra.PositionalArgs) *cobra.Command {
		opts := &MemoryOptions{IO: f.IOStreams, Config: f.Config, Now: f.Now, Action: strings.Fields(use)[0]}
		c := &cobra.Command{Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, args []string) error {
				switch opts.Action {
				case "add":
					opts.Text = args[0]
				case "edit":
					opts.ID, opts.Text = args[0], args[1]
				case "show", "forget":
					opts.ID = args[0]
				}
				opts.Service = f.Service
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return memoryRun(cmd.Context(), opts)
			}}
		c.Flags().StringVar(&opts.Account, "account", "", "account (default: the only one, or the first)")
		switch opts.Action {
		case "list":
			c.Flags().StringVar(&opts.Contact, "contact", "", "only records about this address (or @domain)")
			c.Flags().StringVar(&opts.Kind, "kind", "", "only records of this kind")
			c.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
		case "show":
			c.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
		case "add":
			c.Flags().StringVar(&opts.Contact, "contact", "", "the address (or @domain) the record is about; empty for every draft")
			c.Flags().StringVar(&opts.Kind, "kind", "", "fact | preference | rule | style | temporary (required)")
			c.Flags().StringVar(&opts.Expires, "expires", "", "YYYY-MM-DD: the last day a temporary record applies")
		}
		return c
	}
	cmd.AddCommand(
		mk("list", "List memory records", cobra.NoArgs),
		mk("show ID", "Show one memory record", cobra.ExactArgs(1)),
		mk("forget ID", "Delete one memory record", cobra.ExactArgs(1)),
		mk("add TEXT", "Add a memory record", cobra.ExactArgs(1)),
		mk("edit ID TEXT", "Replace a memory record's text", cobra.ExactArgs(2)),
	)
	return cmd
}

func memoryRun(ctx context.Context, opts *MemoryOptions) error {
	var add store.MemoryRecord
	if opts.Action == "add" {
		// Usage errors come before anything is opened.
		if opts.Kind == "" {
			return cmdutil.UsageErr("memory add: --kind is required (%s)", strings.Join(store.MemoryKinds, ", "))
		}
		add = store.MemoryRecord{Kind: opts.Kind, Contact: opts.Contact, Text: opts.Text}
		if opts.Expires != "" {
			day, err := time.Parse(time.DateOnly, opts.Expires)
			if err != nil {
				return cmdutil.UsageErr("memory add: --expires %q: want YYYY-MM-DD", opts.Expires)
			}
			add.Expires = day.AddDate(0, 0, 1)
		}
	}
	account, svc, closeSvc, err := cmdutil.AccountService(ctx, opts.Config, opts.Service, opts.Account)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	notFound := func(err error) error {
		if errors.Is(err, store.ErrNotFound) {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no memory record %s", termsafe.Line(opts.ID)),
				Hint: "list them with `mailagent memory list`"}
		}
		if errors.Is(err, api.ErrBadRequest) {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err}
		}
		return err
	}
	switch opts.Action {
	case "list":
		recs, err := svc.Memory(ctx, api.MemoryFilter{Account: account, Contact: opts.Contact, Kind: opts.Kind})
		if err != nil {
			return err
		}
		if opts.JSON {
			return cmdutil.WriteJSON(opts.IO.Out, view.ToMemoryJSONs(recs))
		}
		printMemory(opts.IO.Out, recs, opts.Now())
	case "show":
		r, err := svc.MemoryRecord(ctx, opts.ID)
		if err != nil {
			return notFound(err)
		}
		if opts.JSON {
			return cmdutil.WriteJSON(opts.IO.Out, view.ToMemoryJSON(r))
		}
		printMemoryRecord(opts.IO.Out, r)
	case "forget":
		if err := svc.ForgetMemory(ctx, opts.ID); err != nil {
			return notFound(err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "forgot %s\n", termsafe.Line(opts.ID))
	case "add":
		add.Account = account
		r, err := svc.AddMemory(ctx, add)
		if err != nil {
			return notFound(err)
		}
		fmt.Fprintln(opts.IO.Out, r.ID)
	case "edit":
		r, err := svc.EditMemory(ctx, opts.ID, opts.Text)
		if err != nil {
			return notFound(err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "edited %s\n", r.ID)
	}
	return nil
}

func memoryWho(r *store.MemoryRecord) string {
	if r.Contact == "" {
		return "(everyone)"
	}
	return termsafe.Line(r.Contact)
}

func printMemory(w io.Writer, recs []store.MemoryRecord, now time.Time) {
	if len(recs) == 0 {
		fmt.Fprintln(w, "no memory records yet")
		return
	}
	var tb cmdutil.Table
	tb.Row("ID", "KIND", "CONTACT", "AGE", "SOURCE", "TEXT")
	for i := range recs {
		r := &recs[i]
		kind := r.Kind
		if !r.Active(now) {
			kind += " (expired)"
		}
		tb.Row(r.ID, kind, memoryWho(r), humantime.Age(now, r.Created), cmdutil.Truncate(termsafe.Line(r.Source), 30), cmdutil.Truncate(termsafe.Line(r.Text), 70))
	}
	_ = tb.Write(w)
}

func printMemoryRecord(w io.Writer, r *store.MemoryRecord) {
	fmt.Fprintf(w, "%s %s about %s\n", r.ID, r.Kind, memoryWho(r))
	if r.Intent != "" {
		fmt.Fprintf(w, "intent: %s\n", termsafe.Line(r.Intent))
	}
	fmt.Fprintf(w, "source: %s\ncreated: %s\n", termsafe.Line(r.Source), r.Created.Format(time.RFC3339))
	if !r.Expires.IsZero() {
		fmt.Fprintf(w, "expires: %s\n", r.Expires.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "\n%s\n", termsafe.Text(r.Text))
}
