package root

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/unsubscribe"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func TestNewCmdUnsubscribeFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	var got *unsubscribe.UnsubscribeOptions
	cmd := unsubscribe.NewCmdUnsubscribe(cmdutil.New(ios), func(_ context.Context, o *unsubscribe.UnsubscribeOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"<id@lists.example.org>", "--yes", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Ref != "<id@lists.example.org>" || !got.Yes || !got.JSON {
		t.Fatalf("runF got %+v, want the id, --yes and --json", got)
	}
}

// TestConfirmSendsOnlyOnYes (class "unsubscribe", the owner's consent):
// without --yes an unsubscribe goes ahead only when the owner, at a
// terminal, answers y; off a terminal it refuses with a usage error that
// names --yes, and any other answer sends nothing. Every refusal is
// counted as an attack tried; through counts those that went ahead.
// Positive control: --yes goes ahead without asking.
func TestConfirmSendsOnlyOnYes(t *testing.T) {
	t.Parallel()
	run := func(tty bool, answer string, yes bool) error {
		ios := iostreams.New(strings.NewReader(answer), &bytes.Buffer{}, &bytes.Buffer{})
		ios.SetStdinTTY(tty)
		f := cmdutil.New(ios)
		defer f.Close()
		return unsubscribe.Confirm(f, &unsubscribe.UnsubscribeOptions{Yes: yes}, "news@lists.example.org", "a mail to leave@lists.example.org")
	}
	tried, through := 0, 0
	tried++
	err := run(false, "y\n", false) // a script (stdin not a terminal) that pipes y
	if err == nil {
		through++
	} else if ue, ok := cmdutil.AsUserError(err); !ok || ue.Code != cmdutil.ExitUsage || !strings.Contains(ue.Hint, "--yes") {
		t.Errorf("off a terminal: %v, want a usage error naming --yes", err)
	}
	for _, answer := range []string{"n\n", "\n", "", "yes please\n", "yy\n"} {
		tried++
		err := run(true, answer, false)
		if err == nil {
			through++
			continue
		}
		if ue, ok := cmdutil.AsUserError(err); ok && ue.Code != cmdutil.ExitFailure {
			t.Errorf("answer %q: exit %d, want %d (nothing sent)", answer, ue.Code, cmdutil.ExitFailure)
		}
	}
	t.Logf("unsubscribe consent: %d attacks tried, %d through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d unconfirmed unsubscribes went ahead", through, tried)
	}
	if err := run(true, "y\n", false); err != nil {
		t.Errorf("answered y: %v", err)
	}
	if err := run(false, "", true); err != nil {
		t.Errorf("positive control --yes: %v, want it to go ahead", err)
	}
}

// TestRunReportsTheServiceError: a service that cannot open (no
// configuration, a held database) is the command's error, and nothing is
// asked or printed.
func TestRunReportsTheServiceError(t *testing.T) {
	t.Parallel()
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.New(ios)
	want := errors.New("database held")
	f.Service = func(context.Context, bool) (api.Service, func() error, error) { return nil, nil, want }
	if err := unsubscribe.Run(context.Background(), f, &unsubscribe.UnsubscribeOptions{Ref: "x"}); !errors.Is(err, want) {
		t.Fatalf("Run: %v, want %v", err, want)
	}
	if out.Len()+errOut.Len() != 0 {
		t.Errorf("printed %q %q", out, errOut)
	}
}
