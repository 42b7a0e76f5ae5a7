package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func TestRemoteTarget(t *testing.T) {
	t.Setenv(EnvRemote, "ssh://env@envhost")
	tests := []struct {
		name, flag, command string
		want                string // target; "" = none
		code                int    // a UserError's code; 0 = no error
	}{
		{"the environment", "", "", "ssh://env@envhost", 0},
		{"the flag wins", "ssh://ada@box:2222", "", "ssh://ada@box:2222", 0},
		{"a bad URL is a usage error", "ssh://-oProxyCommand=id", "", "", ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			f := New(ios)
			f.Remote, f.RemoteCommand = tt.flag, tt.command
			got, ok, err := f.RemoteTarget()
			if tt.code != 0 {
				var ue *UserError
				if !errors.As(err, &ue) || ue.Code != tt.code || !errors.Is(err, api.ErrBadRemote) {
					t.Fatalf("got %v, want exit %d wrapping ErrBadRemote", err, tt.code)
				}
				return
			}
			if err != nil || !ok || got.String() != tt.want {
				t.Errorf("got %v %v %v, want %s", got, ok, err, tt.want)
			}
		})
	}
	t.Setenv(EnvRemote, "")
	ios, _, _, _ := iostreams.Test()
	f := New(ios)
	f.RemoteCommand = "/opt/mailagent"
	if _, _, err := f.RemoteTarget(); err == nil {
		t.Error("--remote-command without --remote: accepted")
	}
}

func TestRefuseRemote(t *testing.T) {
	t.Setenv(EnvRemote, "")
	root := &cobra.Command{Use: "mailagent"}
	triage := &cobra.Command{Use: "triage", Annotations: map[string]string{LocalOnlyAnnotation: "true"}}
	sub := &cobra.Command{Use: "sub"}
	triage.AddCommand(sub)
	status := &cobra.Command{Use: "status"}
	root.AddCommand(triage, status)
	ios, _, _, _ := iostreams.Test()
	f := New(ios)
	if err := f.RefuseRemote(triage); err != nil {
		t.Errorf("no remote: %v", err)
	}
	f.Remote = "ssh://box"
	for _, c := range []*cobra.Command{triage, sub} {
		var ue *UserError
		if err := f.RefuseRemote(c); !errors.As(err, &ue) || ue.Code != ExitUsage || !strings.Contains(err.Error(), "--remote") {
			t.Errorf("%s with --remote: got %v, want a usage error naming --remote", c.CommandPath(), err)
		}
	}
	if err := f.RefuseRemote(status); err != nil {
		t.Errorf("status with --remote: %v", err)
	}
}

// TestRemoteServiceLocal: without a remote setting the local service is
// used; with a bad one, neither it nor ssh runs.
func TestRemoteServiceLocal(t *testing.T) {
	t.Setenv(EnvRemote, "")
	ios, _, _, _ := iostreams.Test()
	f := New(ios)
	called := 0
	local := func(context.Context, bool) (api.Service, func() error, error) {
		called++
		return nil, func() error { return nil }, nil
	}
	if _, _, err := f.RemoteService(local)(context.Background(), true); err != nil || called != 1 {
		t.Errorf("no remote: called %d, %v", called, err)
	}
	f.Remote = "ssh://host name"
	if _, _, err := f.RemoteService(local)(context.Background(), true); err == nil || called != 1 {
		t.Errorf("bad remote: called local %d times, err %v", called, err)
	}
}

// TestRemoteStderrIsSanitised: what the remote end writes on stderr
// (hostile text: a terminal escape retitling the window, a fake prompt)
// reaches the owner's terminal only through Report's termsafe. The
// control: the error itself carries the escape, so without that it would
// land.
func TestRemoteStderrIsSanitised(t *testing.T) {
	attacks := []struct{ name, script, raw string }{
		{"window title", `printf '\033]0;pwned\007' >&2`, "\x1b]0;pwned\x07"},
		{"clear screen", `printf '\033[2J' >&2`, "\x1b[2J"},
		{"fake prompt", `printf 'ssh: error\rPassword for ada: x\n' >&2`, "\rPassword for ada: x"},
	}
	tried, through := 0, 0
	for _, a := range attacks {
		tried++
		dir := t.TempDir()
		ssh := filepath.Join(dir, "ssh")
		if err := os.WriteFile(ssh, []byte("#!/bin/sh\n"+a.script+"; exit 255\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvSSH, ssh)
		t.Setenv(EnvRemote, "")
		ios, _, _, _ := iostreams.Test()
		f := New(ios)
		f.Remote = "ssh://ada@box"
		_, _, err := f.RemoteService(nil)(context.Background(), false)
		var ue *UserError
		if !errors.As(err, &ue) || ue.Code != ExitUnreachable {
			t.Fatalf("%s: got %v, want exit 3", a.name, err)
		}
		var stderr bytes.Buffer
		if code := Report(&stderr, err); code != ExitUnreachable {
			t.Errorf("%s: exit: got %d, want 3", a.name, code)
		}
		if strings.ContainsAny(stderr.String(), "\x1b\x07\r") {
			through++
			t.Errorf("%s: the terminal got control characters: %q", a.name, stderr.String())
		}
		// The control: the error itself carries the hostile bytes, so
		// without Report's cleaning they would reach the terminal.
		if !strings.Contains(err.Error(), a.raw) {
			t.Errorf("control, %s: the raw error %q does not carry %q, so the test shows nothing", a.name, err, a.raw)
		}
	}
	t.Logf("hostile remote stderr: %d tried, %d through", tried, through)
}
