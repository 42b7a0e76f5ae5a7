package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The remote transport: the same API as the socket, reached on another
// host by running `ssh host mailagent serve --stdio` and speaking HTTP over
// the ssh process's stdin and stdout (as `docker -H ssh://` does). OpenSSH
// does the authentication, the host-key checks and reads the user's
// ~/.ssh/config; mailagent opens no port.

// DefaultRemoteCommand is the program run on the remote host when the URL
// names none.
const DefaultRemoteCommand = "mailagent"

// ErrBadRemote is wrapped by every refusal of a --remote URL.
var ErrBadRemote = errors.New("bad remote")

// RemoteTarget is a parsed, validated ssh://[user@]host[:port] URL.
type RemoteTarget struct {
	User    string // "" = ssh's default (the config's, else the local user)
	Host    string // a host name, an ~/.ssh/config alias or an IP address
	Port    int    // 0 = ssh's default
	Command string // the mailagent binary on the remote host
}

// String is the target as a URL (no command).
func (t RemoteTarget) String() string {
	s := "ssh://"
	if t.User != "" {
		s += t.User + "@"
	}
	h := t.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	s += h
	if t.Port != 0 {
		s += ":" + strconv.Itoa(t.Port)
	}
	return s
}

// skipRemoteValidation switches ParseRemote's character checks off: only
// the adversarial test's positive control sets it
// (SwitchOffRemoteValidationForTest).
var skipRemoteValidation bool

// SwitchOffRemoteValidationForTest turns off ParseRemote's refusal of
// hostile hosts, users and commands until the returned func is called. It
// exists only for the positive control of the adversarial test (the same
// URLs, the check off, must reach ssh's argument list); never call it
// from a parallel test.
func SwitchOffRemoteValidationForTest() (restore func()) {
	skipRemoteValidation = true
	return func() { skipRemoteValidation = false }
}

// ParseRemote parses and validates raw, an ssh://[user@]host[:port] URL
// with an optional ?command=PATH naming the remote mailagent binary.
// command, when not empty, overrides the URL's (--remote-command).
//
// It is strict, because its parts become arguments of ssh: a host or user
// starting with '-' (an ssh option: ssh://-oProxyCommand=…), any space,
// control character or shell metacharacter, a password, a path, a
// fragment or an unknown query parameter are refused with an error
// wrapping ErrBadRemote. The command may hold only letters, digits and
// "/._+~-" (ssh hands it to the remote shell) and must not start with '-'.
func ParseRemote(raw, command string) (RemoteTarget, error) {
	bad := func(format string, args ...any) (RemoteTarget, error) {
		return RemoteTarget{}, fmt.Errorf("%w %q: %s", ErrBadRemote, raw, fmt.Sprintf(format, args...))
	}
	if raw == "" {
		return bad("empty")
	}
	if !skipRemoteValidation && strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return bad("spaces and control characters are not allowed")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("%v", err)
	}
	if u.Scheme != "ssh" {
		return bad("want ssh://[user@]host[:port]")
	}
	if u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.Fragment != "" || u.RawFragment != "" {
		return bad("want ssh://[user@]host[:port] with nothing after it but ?command=PATH")
	}
	t := RemoteTarget{Host: u.Hostname(), Command: DefaultRemoteCommand}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return bad("a password in the URL is refused: ssh asks for it, or use a key")
		}
		t.User = u.User.Username()
		if t.User == "" {
			return bad("empty user name")
		}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("port %q is not 1-65535", p)
		}
		t.Port = n
	}
	query, err := url.ParseQuery(u.RawQuery) // u.Query() would drop a bad pair silently
	if err != nil {
		return bad("query: %v", err)
	}
	for k, v := range query {
		if k != "command" || len(v) != 1 {
			return bad("unknown query parameter %q (only command=PATH)", k)
		}
		t.Command = v[0]
	}
	if command != "" {
		t.Command = command
	}
	if t.Host == "" {
		return bad("no host")
	}
	if skipRemoteValidation {
		return t, nil
	}
	if !safeWord(t.Host, ".-:_%") {
		return bad("host %q: want a host name or an address", t.Host)
	}
	if t.User != "" && !safeWord(t.User, "._-") {
		return bad("user %q: want letters, digits, '.', '_' or '-', not starting with '-'", t.User)
	}
	if !safeWord(t.Command, "/._+~-") {
		return bad("command %q: want a path of letters, digits and /._+~-, not starting with '-'", t.Command)
	}
	return t, nil
}

// safeWord reports whether s is ASCII letters, digits and extra, and does
// not start with '-' (ssh would read it as an option).
func safeWord(s, extra string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, r := range s {
		ok := r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(extra, r))
		if !ok {
			return false
		}
	}
	return true
}

// RemoteOptions tune how the ssh process is run. The zero value runs
// "ssh" from PATH with ssh's own configuration.
type RemoteOptions struct {
	// SSH is the ssh program ("" = "ssh" from PATH); MAILAGENT_SSH sets it
	// for the commands (a wrapper adding -F FILE, as GIT_SSH does).
	SSH string
	// Batch adds -o BatchMode=yes: ssh never asks for a password or a
	// host-key confirmation (set when stdin is not a terminal).
	Batch bool
	// Args are more ssh options, before the destination (tests pass
	// -o UserKnownHostsFile=… -o StrictHostKeyChecking=yes -i KEY).
	Args []string
}

// SSHArgs is the ssh command line (without the program) that runs
// `mailagent serve --stdio` on t. The destination comes after "--" and
// every part of it was validated by ParseRemote, so nothing from the URL
// can be read as an ssh option.
func (t RemoteTarget) SSHArgs(o RemoteOptions) []string {
	args := []string{"-T", "-o", "ClearAllForwardings=yes"}
	if o.Batch {
		args = append(args, "-o", "BatchMode=yes")
	}
	if t.Port != 0 {
		args = append(args, "-p", strconv.Itoa(t.Port))
	}
	if t.User != "" {
		args = append(args, "-l", t.User)
	}
	args = append(args, o.Args...)
	args = append(args, "--", t.Host, t.Command, "serve", "--stdio")
	return args
}

// remoteDialer runs one ssh per connection and remembers what the last
// one said on stderr, for the error of a connection that failed.
type remoteDialer struct {
	program string
	args    []string
	last    *lastStderr
}

func (d *remoteDialer) dial(ctx context.Context) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := startCommandConn(d.program, d.args, d.last)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newRemoteClient is a Client of the watcher on t, each connection one
// ssh process (ControlMaster in ~/.ssh/config shares one, if the user
// wants), and its dialer. It does not connect.
func newRemoteClient(t RemoteTarget, o RemoteOptions) (*Client, *remoteDialer) {
	program := o.SSH
	if program == "" {
		program = "ssh"
	}
	d := &remoteDialer{program: program, args: t.SSHArgs(o), last: &lastStderr{}}
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return d.dial(ctx) },
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &Client{path: t.String(), hc: &http.Client{Transport: tr}, subscribeTimeout: remoteDialTimeout}, d
}

// remoteDialTimeout bounds DialRemote's first request: an ssh handshake
// and a password prompt take longer than a socket.
const remoteDialTimeout = 30 * time.Second

// DialRemote connects to the watcher on t over ssh and checks that it
// answers. When it does not, the error says what ssh or the remote
// `serve` said on stderr (a refused host key, no watcher running there).
func DialRemote(ctx context.Context, t RemoteTarget, o RemoteOptions) (*Client, error) {
	c, d := newRemoteClient(t, o)
	dctx, cancel := context.WithTimeout(ctx, remoteDialTimeout)
	defer cancel()
	_, err := c.Status(dctx)
	var remote *Error
	if err != nil && !errors.As(err, &remote) {
		_ = c.Close()
		if msg := d.last.String(); msg != "" {
			return nil, fmt.Errorf("remote %s: %s: %w", t, msg, err)
		}
		return nil, fmt.Errorf("remote %s: %w", t, err)
	}
	return c, nil
}
