package agente2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
)

// remote is the rig of the remote-review tests: the stack's private
// OpenSSH server (scripts/e2e-sshd.sh, its own port, host key and
// authorized key) in front of this test's watcher. The "remote host" is
// loopback, but every byte goes through a real ssh client, a real sshd and
// `mailagent serve --stdio` started by it.
type remote struct {
	e   *env
	dir string
	// url is ssh://user@127.0.0.1:port?command=<the serve wrapper>.
	url string
	// ssh is the ssh wrapper (MAILAGENT_SSH): the test's key and
	// known_hosts, StrictHostKeyChecking=yes; it notes each run in sshLog
	// and refuses to run while blockFile exists.
	ssh, sshLog, blockFile string
	// serveCmd is the command sshd runs: it notes its pid and its sshd
	// parent's in pidsFile, and while delayFile exists it holds the
	// watcher's answers back for a few seconds (the cut-mid-approval test).
	serveCmd, pidsFile, delayFile string
	// emptyState is the --state-dir of every client command: no socket,
	// no database and no config file there, so a command that ignored
	// --remote would fail.
	emptyState string
	knownHosts string
}

// newRemote needs the sshd of scripts/e2e-sshd.sh; it skips without it.
func newRemote(t *testing.T, e *env) *remote {
	t.Helper()
	get := func(k string) string { return os.Getenv("MAILAGENT_E2E_SSH_" + k) }
	host, port, user, key, kh := get("HOST"), get("PORT"), get("USER"), get("KEY"), get("KNOWN_HOSTS")
	if host == "" || port == "" || key == "" || kh == "" {
		t.Skip("no e2e sshd (MAILAGENT_E2E_SSH_* unset: scripts/e2e-sshd.sh start, which needs openssh-server)")
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	r := &remote{e: e, dir: e.dir, knownHosts: kh}
	r.sshLog = filepath.Join(r.dir, "ssh.log")
	r.blockFile = filepath.Join(r.dir, "ssh.block")
	r.pidsFile = filepath.Join(r.dir, "serve.pids")
	r.delayFile = filepath.Join(r.dir, "serve.delay")
	r.emptyState = filepath.Join(r.dir, "empty-state")
	if err := os.MkdirAll(r.emptyState, 0o700); err != nil {
		t.Fatal(err)
	}
	r.ssh = r.writeSSH("ssh", kh)
	r.serveCmd = filepath.Join(r.dir, "remote-mailagent")
	writeScript(t, r.serveCmd, fmt.Sprintf(`#!/bin/sh
echo "$$ $PPID $(date +%%T.%%N)" >> %[1]s
if [ -e %[2]s ]; then
	%[3]s --config %[4]s "$@" | { sleep 4; cat; }
else
	exec %[3]s --config %[4]s "$@"
fi
`, r.pidsFile, r.delayFile, binary, e.cfgPath))
	u := url.URL{Scheme: "ssh", User: url.User(user), Host: host + ":" + port, RawQuery: "command=" + r.serveCmd}
	r.url = u.String()
	return r
}

// writeSSH writes an ssh wrapper using known_hosts file kh.
func (r *remote) writeSSH(name, kh string) string {
	path := filepath.Join(r.dir, name)
	writeScript(r.e.t, path, fmt.Sprintf(`#!/bin/sh
echo "$(date +%%T.%%N) $*" >> %[1]s
[ -e %[2]s ] && { echo "ssh: blocked by the test" >&2; exit 255; }
exec ssh -i %[3]s -o IdentitiesOnly=yes -o UserKnownHostsFile=%[4]s -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null "$@"
`, r.sshLog, r.blockFile, os.Getenv("MAILAGENT_E2E_SSH_KEY"), kh))
	return path
}

func writeScript(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// options are what api.DialRemote needs for this rig, in-process.
func (r *remote) options() api.RemoteOptions { return api.RemoteOptions{SSH: r.ssh, Batch: true} }

// target is r.url parsed.
func (r *remote) target() api.RemoteTarget {
	r.e.t.Helper()
	t, err := api.ParseRemote(r.url, "")
	if err != nil {
		r.e.t.Fatal(err)
	}
	return t
}

// dial is a Client of the watcher through ssh.
func (r *remote) dial() *api.Client {
	r.e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitShort)
	defer cancel()
	c, err := api.DialRemote(ctx, r.target(), r.options())
	if err != nil {
		r.diagnose()
		r.e.t.Fatalf("DialRemote %s: %v", r.url, err)
	}
	r.e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// command is the mailagent binary run as a client on "another machine":
// an empty state directory, --remote, and the ssh wrapper.
func (r *remote) command(ctx context.Context, ssh string, args ...string) *exec.Cmd {
	// No configuration either: the laptop only has ssh access.
	all := append([]string{"--config", filepath.Join(r.emptyState, "none.toml"), "--state-dir", r.emptyState, "--remote", r.url}, args...)
	cmd := exec.CommandContext(ctx, binary, all...)
	cmd.Env = append(os.Environ(), passwordEnv+"="+r.e.password, apiKeyEnv+"=e2e-not-a-real-key", "MAILAGENT_SSH="+ssh)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// run runs a client command to completion.
func (r *remote) run(ssh string, args ...string) (stdout, stderr string, code int) {
	t := r.e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := r.command(ctx, ssh, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("mailagent %v: %v\nstderr:\n%s", args, err, errb.String())
	}
	return out.String(), errb.String(), code
}

// sessions is how many `serve --stdio` sshd started for this test.
func (r *remote) sessions() int { return len(r.pids()) }

// pids are the [serve wrapper, sshd session] pid pairs, oldest first.
func (r *remote) pids() [][2]int {
	b, _ := os.ReadFile(r.pidsFile)
	var out [][2]int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line) // pid, ppid, time
		if len(f) < 2 {
			continue
		}
		a, _ := strconv.Atoi(f[0])
		p, _ := strconv.Atoi(f[1])
		out = append(out, [2]int{a, p})
	}
	return out
}

// sshRuns is how many times the ssh wrapper ran.
func (r *remote) sshRuns() int {
	b, _ := os.ReadFile(r.sshLog)
	return strings.Count(string(b), "\n")
}

// cutAll kills the sshd session process of every live connection
// (SIGKILL: the TCP connection drops, as when a network dies), and
// returns how many it killed.
func (r *remote) cutAll() int {
	n := 0
	for _, pid := range r.live() {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// live are the sshd session pids of the live connections (an old
// session's pid may have been reused: only a live sshd counts).
func (r *remote) live() []int {
	var out []int
	for _, p := range r.pids() {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p[1])); err == nil && strings.TrimSpace(string(comm)) == "sshd" {
			out = append(out, p[1])
		}
	}
	return out
}

// diagnose logs what the rig knows of this test's connections: when the
// ssh wrapper ran, when sshd started the serve wrapper, what state each of
// those processes is in now, and the tail of sshd's log.
func (r *remote) diagnose() {
	t := r.e.t
	t.Helper()
	b, _ := os.ReadFile(r.sshLog)
	t.Logf("ssh wrapper runs (%s):\n%s", r.sshLog, b)
	b, _ = os.ReadFile(r.pidsFile)
	t.Logf("serve wrapper starts, pid ppid time (%s):\n%s", r.pidsFile, b)
	for _, p := range r.pids() {
		for _, pid := range p {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
			t.Logf("pid %d: stat %q (%v), wchan %q", pid, strings.TrimSpace(string(st)), err, wchan)
		}
	}
	if log := os.Getenv("MAILAGENT_E2E_SSHD_LOG"); log != "" {
		b, _ := os.ReadFile(log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		lines = lines[max(0, len(lines)-40):]
		t.Logf("tail of %s:\n%s", log, strings.Join(lines, "\n"))
	}
}

// touch creates (on) or removes (off) a control file.
func (r *remote) touch(path string, on bool) {
	r.e.t.Helper()
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.e.t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		r.e.t.Fatal(err)
	}
}
