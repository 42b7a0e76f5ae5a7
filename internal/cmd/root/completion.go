package root

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// completionTimeout bounds one completion: it reads the watcher's socket
// or the state database (never a mail server), and a shell waiting on a
// Tab key must not hang.
const completionTimeout = 2 * time.Second

// completionRecent is how many of the newest messages explain and
// unsubscribe offer.
const completionRecent = 50

// completionContacts is how many contacts one completion offers: those
// whose address starts with what is typed, so a longer prefix narrows a
// large address book.
const completionContacts = 200

// registerCompletions adds dynamic shell completion: queue ids, outbox ids,
// the trace ids of messages that need review, contact emails, account names and providers. Every value
// comes from the configuration or through the same api.Service the
// commands use, opened without actions (no IMAP, no SMTP).
func registerCompletions(root *cobra.Command, f *cmdutil.Factory) {
	open := func(kind string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeFromService(cmd, f, kind, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasParent() {
			switch c.Parent().Name() + " " + c.Name() {
			case "queue show":
				c.ValidArgsFunction = open("queue-all")
			case "queue approve", "queue reject", "queue edit", "queue snooze", "queue regenerate":
				c.ValidArgsFunction = open("queue-open")
			case "queue unsnooze":
				c.ValidArgsFunction = open("queue-snoozed")
			case "queue retry":
				c.ValidArgsFunction = open("needs-review")
			case "queue cancel":
				c.ValidArgsFunction = open("outbox-scheduled")
			case "contacts show", "contacts note", "contacts forget":
				c.ValidArgsFunction = open("contacts")
			case "memory show", "memory forget", "memory edit":
				c.ValidArgsFunction = open("memory")
			case "followups done", "followups snooze", "followups nudge":
				c.ValidArgsFunction = open("followups")
			}
		}
		switch c.CommandPath() {
		case "mailagent explain":
			c.ValidArgsFunction = open("recent-and-queue")
		case "mailagent unsubscribe":
			c.ValidArgsFunction = open("recent")
		}
		if c.Flags().Lookup("account") != nil {
			_ = c.RegisterFlagCompletionFunc("account", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return completeAccounts(f), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if c.Name() == "init" && c.Flags().Lookup("provider") != nil {
			_ = c.RegisterFlagCompletionFunc("provider", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return append(presetIDs(), "auto"), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
	walk(root)
}

func completeAccounts(f *cmdutil.Factory) []string {
	cfg, err := f.Config()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range cfg.Accounts {
		out = append(out, a.Name+"\t"+a.Email)
	}
	return out
}

// completeFromService lists the candidates of one kind, each with its
// subject (or name) as the description the shell shows. Any failure (no
// configuration, a locked database) offers nothing rather than an error.
// toComplete is what is typed so far; the shell filters by it, and the
// contacts are read from it on (their number is unbounded).
func completeFromService(cmd *cobra.Command, f *cmdutil.Factory, kind, toComplete string) []string {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	cfg, err := f.Config()
	if err != nil {
		return nil
	}
	account := ""
	if kind == "contacts" || kind == "memory" {
		name, _ := cmd.Flags().GetString("account")
		accounts, err := cmdutil.PickAccounts(cfg, name)
		if err != nil || len(accounts) == 0 {
			return nil
		}
		account = accounts[0].Name
	}
	svc, closeSvc, err := f.Service(ctx, false)
	if err != nil {
		return nil
	}
	defer func() { _ = closeSvc() }()
	var out []string
	add := func(value, desc string) {
		// Descriptions are mail text: one sanitised line, no tab.
		desc = strings.ReplaceAll(termsafe.Line(desc), "\t", " ")
		if desc == "" {
			out = append(out, value)
			return
		}
		out = append(out, value+"\t"+cmdutil.Truncate(desc, 60))
	}
	switch kind {
	case "queue-all", "queue-open", "queue-snoozed":
		items, err := svc.Queue(ctx, api.QueueFilter{})
		if err != nil {
			return nil
		}
		for _, q := range items {
			if kind == "queue-open" && q.Status != store.QueuePending && q.Status != store.QueueSnoozed && q.Status != store.QueueFailed {
				continue
			}
			if kind == "queue-snoozed" && q.Status != store.QueueSnoozed {
				continue
			}
			add(q.ID, q.Subject)
		}
	case "needs-review":
		recs, err := svc.NeedsReview(ctx)
		if err != nil {
			return nil
		}
		for _, r := range recs {
			if r.TraceID != "" { // what `queue retry` resolves
				add(r.TraceID, r.Subject)
			}
		}
	case "recent", "recent-and-queue":
		// The newest stored messages, by trace id (what explain and
		// unsubscribe resolve), one page of the message index.
		page, err := api.MessagePage(ctx, svc, api.MessagePageRequest{Limit: completionRecent})
		if err != nil {
			return nil
		}
		for _, r := range page.Messages {
			if r.TraceID != "" {
				add(r.TraceID, r.From.Email+": "+r.Subject)
			}
		}
		if kind == "recent-and-queue" {
			items, err := svc.Queue(ctx, api.QueueFilter{Status: store.QueuePending})
			if err != nil {
				return out
			}
			for _, q := range items {
				add(q.ID, q.Subject)
			}
		}
	case "followups":
		fus, err := svc.Followups(ctx, api.FollowupFilter{}) // the open ones
		if err != nil {
			return nil
		}
		for _, fu := range fus {
			add(fu.ID, fu.Subject)
		}
	case "outbox-scheduled":
		recs, err := svc.Outbox(ctx, store.OutboxScheduled)
		if err != nil {
			return nil
		}
		for _, r := range recs {
			add(r.ID, r.Subject)
		}
	case "contacts":
		cs, err := svc.ContactNames(ctx, account, toComplete, completionContacts)
		if err != nil {
			return nil
		}
		for _, c := range cs {
			add(c.Email, c.Name)
		}
	case "memory":
		recs, err := svc.Memory(ctx, api.MemoryFilter{Account: account})
		if err != nil {
			return nil
		}
		for _, r := range recs {
			add(r.ID, r.Kind+": "+r.Text)
		}
	}
	return out
}

// presetIDs are the providers `init --provider` knows.
func presetIDs() []string {
	var ids []string
	for _, p := range autoconfig.Presets() {
		ids = append(ids, p.ID)
	}
	return ids
}
