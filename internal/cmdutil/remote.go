package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
)

// The remote setting: --remote ssh://[user@]host[:port] (or
// $MAILAGENT_REMOTE) makes every command that talks to a watcher talk to
// the one on that host, over ssh (api.DialRemote); the commands that need
// the local database refuse it (LocalOnly).

// Environment variables of the remote setting.
const (
	// EnvRemote is read when --remote is not given.
	EnvRemote = "MAILAGENT_REMOTE"
	// EnvSSH names the ssh program (a wrapper adding options, as GIT_SSH).
	EnvSSH = "MAILAGENT_SSH"
)

// LocalOnlyAnnotation marks a command that works on the local database or
// mail servers and so refuses --remote (see RefuseRemote).
const LocalOnlyAnnotation = "mailagent:local-only"

// RemoteURL is the remote setting: --remote, else $MAILAGENT_REMOTE, else
// "" (the local watcher or database).
func (f *Factory) RemoteURL() string {
	if f.Remote != "" {
		return f.Remote
	}
	return os.Getenv(EnvRemote)
}

// RemoteTarget parses the remote setting; ok is false when there is none.
// A bad URL is a usage error.
func (f *Factory) RemoteTarget() (t api.RemoteTarget, ok bool, err error) {
	raw := f.RemoteURL()
	if raw == "" {
		if f.RemoteCommand != "" {
			return t, false, UsageErr("--remote-command needs --remote ssh://[user@]host[:port]")
		}
		return t, false, nil
	}
	t, err = api.ParseRemote(raw, f.RemoteCommand)
	if err != nil {
		return t, false, &UserError{Code: ExitUsage, Err: err, Hint: "for example: --remote ssh://ada@mail.example.org:2222"}
	}
	return t, true, nil
}

// RemoteOptions are the ssh options of the remote transport: the program
// from $MAILAGENT_SSH, and batch mode (no password or host-key prompt)
// when stdin is not a terminal.
func (f *Factory) RemoteOptions() api.RemoteOptions {
	return api.RemoteOptions{SSH: os.Getenv(EnvSSH), Batch: !f.IOStreams.IsStdinTTY()}
}

// RemoteService wraps local, the Factory's Service: with a remote setting
// it returns a Client of the watcher on that host instead (withActions is
// moot: the remote watcher acts), without one it calls local. A failed
// connection is ExitUnreachable, naming what ssh said.
func (f *Factory) RemoteService(local ServiceFunc) ServiceFunc {
	return func(ctx context.Context, withActions bool) (api.Service, func() error, error) {
		t, ok, err := f.RemoteTarget()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			if local == nil {
				return nil, nil, errors.New("no application service in this build")
			}
			return local(ctx, withActions)
		}
		c, err := api.DialRemote(ctx, t, f.RemoteOptions())
		if err != nil {
			return nil, nil, Unreachable(err, fmt.Sprintf("check that `ssh %s` logs in and that `mailagent watch` runs there", t))
		}
		return c, c.Close, nil
	}
}

// RefuseRemote is a usage error when cmd (or a parent) is marked
// LocalOnlyAnnotation and a remote setting is in force.
func (f *Factory) RefuseRemote(cmd *cobra.Command) error {
	if f.RemoteURL() == "" && f.RemoteCommand == "" {
		return nil
	}
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[LocalOnlyAnnotation] != "" {
			return &UserError{Code: ExitUsage,
				Err:  fmt.Errorf("%s works on this machine's database and mail servers: it does not take --remote (or %s)", c.CommandPath(), EnvRemote),
				Hint: "run it on the host itself, e.g. ssh HOST mailagent " + c.Name()}
		}
	}
	return nil
}
