package contacts

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// confirmForget stops `contacts forget` from deleting a contact's memory
// (history, summary, the owner's notes: none of it can be rebuilt) unless
// --yes is given or the owner, at a terminal, answers y. Like `queue
// approve`, a script must say --yes explicitly.
func confirmForget(ctx context.Context, svc api.Service, account string, opts *ContactsOptions) error {
	if opts.Yes {
		return nil
	}
	c, err := svc.Contact(ctx, account, opts.Email)
	noContact := errors.Is(err, store.ErrNotFound)
	if err != nil && !noContact {
		return err
	}
	learned, err := svc.Memory(ctx, api.MemoryFilter{Account: account, Contact: opts.Email})
	if err != nil {
		return err
	}
	if noContact && len(learned) == 0 {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no contact %s in account %s", termsafe.Line(opts.Email), account)}
	}
	if noContact {
		c = &store.Contact{Email: opts.Email}
	}
	who := termsafe.Line(c.Email)
	if !opts.IO.IsStdinTTY() {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage,
			Err: fmt.Errorf("nothing forgotten: forgetting %s deletes its history, summary and notes, and the %d memory records and examples about it",
				who, len(learned)),
			Hint: "check it with `mailagent contacts show " + who + "` and `mailagent memory list --contact " + who + "`, then forget with --yes"}
	}
	yes, err := opts.Prompter().Confirm(fmt.Sprintf("forget %s (%d in, %d out, %d notes, %d memory records and examples)?", who, c.Inbound, c.Outbound, len(c.Notes), len(learned)), false)
	if err != nil {
		return err
	}
	if !yes {
		return &cmdutil.UserError{Code: cmdutil.ExitFailure, Err: errors.New("nothing forgotten")}
	}
	return nil
}
