package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// confirmForget stops `contacts forget` from deleting a contact's memory
// (history, summary, the owner's notes: none of it can be rebuilt) unless
// --yes is given or the owner, at a terminal, answers y. Like `queue
// approve`, a script must say --yes explicitly.
func confirmForget(ctx context.Context, f *Factory, svc api.Service, account string, opts *ContactsOptions) error {
	if opts.Yes {
		return nil
	}
	c, err := svc.Contact(ctx, account, opts.Email)
	if errors.Is(err, store.ErrNotFound) {
		return &UserError{Code: ExitUsage, Err: fmt.Errorf("no contact %s in account %s", termsafe.Line(opts.Email), account)}
	}
	if err != nil {
		return err
	}
	who := termsafe.Line(c.Email)
	if !stdinIsTTY(f.Stdin) {
		return &UserError{Code: ExitUsage,
			Err:  fmt.Errorf("nothing forgotten: forgetting %s deletes its history, summary and notes", who),
			Hint: "check it with `mailagent contacts show " + who + "`, then forget with --yes"}
	}
	fmt.Fprintf(f.Stderr, "forget %s (%d in, %d out, %d notes)? y/N: ", who, c.Inbound, c.Outbound, len(c.Notes))
	answer, err := bufio.NewReader(f.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read answer: %w", err)
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return &UserError{Code: ExitFailure, Err: errors.New("nothing forgotten")}
	}
	return nil
}
