package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/zalando/go-keyring"
)

// KeyringService is the service name of mailagent's keyring entries.
const KeyringService = "mailagent"

// defaultCmdTimeout bounds a secret command when no cmd_timeout is set.
const defaultCmdTimeout = 30 * time.Second

// maxStderr caps how much of a failing command's stderr goes into the error.
const maxStderr = 2048

// ErrNoSecret is wrapped by the Resolve methods when the configured source
// yields no value (unset variable, empty command output, missing keyring
// entry).
var ErrNoSecret = errors.New("no secret")

func (e Endpoint) hasSource() bool {
	return !e.Password.Empty() || e.PasswordCmd != "" || e.PasswordEnv != "" || e.PasswordKeyring || e.OAuth2TokenCmd != ""
}

// where names the endpoint in errors: accounts.personal.imap.
func (e Endpoint) where() string {
	kind := e.kind
	if kind == "" {
		kind = "endpoint"
	}
	return fmt.Sprintf("account %q %s", e.account, kind)
}

// KeyringUser is the keyring user of this endpoint: "<account>/<imap|smtp>".
func (e Endpoint) KeyringUser() string { return e.account + "/" + e.kind }

// ResolvePassword returns the endpoint's password from its configured
// source: the literal password, password_cmd (run with `sh -c`),
// password_env or the system keyring. It fails for an endpoint that uses
// oauth2_token_cmd; call ResolveOAuth2Token for those. Errors never
// contain the secret or the command's output; a failing command's stderr
// is included.
func (e Endpoint) ResolvePassword(ctx context.Context) (Secret, error) {
	switch {
	case !e.Password.Empty():
		return e.Password, nil
	case e.PasswordCmd != "":
		return runSecretCmd(ctx, e.where()+" password_cmd", e.PasswordCmd, e.CmdTimeout.Duration)
	case e.PasswordEnv != "":
		return fromEnv(e.where()+" password_env", e.PasswordEnv)
	case e.PasswordKeyring:
		v, err := keyring.Get(KeyringService, e.KeyringUser())
		if errors.Is(err, keyring.ErrNotFound) {
			return Secret{}, fmt.Errorf("%s password_keyring: no entry for service %q user %q: %w (fix: store it, e.g. `secret-tool store --label=mailagent service %s username %s`)",
				e.where(), KeyringService, e.KeyringUser(), ErrNoSecret, KeyringService, e.KeyringUser())
		}
		if err != nil {
			return Secret{}, fmt.Errorf("%s password_keyring: read keyring: %w", e.where(), err)
		}
		if v == "" {
			return Secret{}, fmt.Errorf("%s password_keyring: entry %q is empty: %w", e.where(), e.KeyringUser(), ErrNoSecret)
		}
		return NewSecret(v), nil
	case e.OAuth2TokenCmd != "":
		return Secret{}, fmt.Errorf("%s uses oauth2_token_cmd, not a password", e.where())
	}
	return Secret{}, fmt.Errorf("%s: no password source configured: %w", e.where(), ErrNoSecret)
}

// ResolveOAuth2Token runs oauth2_token_cmd and returns the access token.
// Call it before each login: tokens expire.
func (e Endpoint) ResolveOAuth2Token(ctx context.Context) (Secret, error) {
	if e.OAuth2TokenCmd == "" {
		return Secret{}, fmt.Errorf("%s: no oauth2_token_cmd configured: %w", e.where(), ErrNoSecret)
	}
	return runSecretCmd(ctx, e.where()+" oauth2_token_cmd", e.OAuth2TokenCmd, e.CmdTimeout.Duration)
}

// ResolveAPIKey returns the LLM API key from api_key, api_key_cmd,
// api_key_keyring or api_key_env.
func (l LLM) ResolveAPIKey(ctx context.Context) (Secret, error) {
	switch {
	case !l.APIKey.Empty():
		return l.APIKey, nil
	case l.APIKeyCmd != "":
		return runSecretCmd(ctx, "llm api_key_cmd", l.APIKeyCmd, l.CmdTimeout.Duration)
	case l.APIKeyKeyring:
		v, err := keyring.Get(KeyringService, l.KeyringUser())
		if errors.Is(err, keyring.ErrNotFound) {
			return Secret{}, fmt.Errorf("llm api_key_keyring: no entry for service %q user %q: %w (fix: store it, e.g. `secret-tool store --label=mailagent service %s username %s`)",
				KeyringService, l.KeyringUser(), ErrNoSecret, KeyringService, l.KeyringUser())
		}
		if err != nil {
			return Secret{}, fmt.Errorf("llm api_key_keyring: read keyring: %w", err)
		}
		if v == "" {
			return Secret{}, fmt.Errorf("llm api_key_keyring: entry %q is empty: %w", l.KeyringUser(), ErrNoSecret)
		}
		return NewSecret(v), nil
	case l.APIKeyEnv != "":
		return fromEnv("llm api_key_env", l.APIKeyEnv)
	}
	return Secret{}, fmt.Errorf("llm: no API key source configured: %w", ErrNoSecret)
}

func fromEnv(what, name string) (Secret, error) {
	v := os.Getenv(name)
	if v == "" {
		return Secret{}, fmt.Errorf("%s: environment variable %s is empty or unset: %w (fix: export %s=…)", what, name, ErrNoSecret, name)
	}
	return NewSecret(v), nil
}

// runSecretCmd runs command with `sh -c` and returns its stdout without the
// trailing newline. stdout never appears in an error; stderr does.
func runSecretCmd(ctx context.Context, what, command string, timeout time.Duration) (Secret, error) {
	if timeout <= 0 {
		timeout = defaultCmdTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.Stdin = nil
	// A child of sh that keeps stdout open must not hang us past the
	// deadline: kill the whole process group, then stop waiting for pipes.
	setProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > maxStderr {
			msg = msg[:maxStderr] + "…"
		}
		if ctx.Err() != nil {
			reason := ctx.Err()
			if errors.Is(reason, context.DeadlineExceeded) {
				return Secret{}, fmt.Errorf("%s: timed out after %s: %w", what, timeout, reason)
			}
			return Secret{}, fmt.Errorf("%s: %w", what, reason)
		}
		// sh's own exit codes for a command it could not run: say which
		// program, and what to do, instead of "exit status 127".
		var ee *exec.ExitError
		if errors.As(err, &ee) && (ee.ExitCode() == 127 || ee.ExitCode() == 126) {
			prog := command
			if f := strings.Fields(command); len(f) > 0 {
				prog = f[0]
			}
			why, fix := "was not found", "install it, or give its full path"
			if ee.ExitCode() == 126 {
				why, fix = "cannot be run (not executable)", "chmod +x it, or give the right path"
			}
			return Secret{}, fmt.Errorf("%s: the program %q %s: %w (fix: %s in %s)", what, prog, why, err, fix, what)
		}
		if msg != "" {
			return Secret{}, fmt.Errorf("%s: %w: stderr: %s", what, err, msg)
		}
		return Secret{}, fmt.Errorf("%s: %w", what, err)
	}
	out := stdout.String()
	out = strings.TrimSuffix(out, "\n")
	out = strings.TrimSuffix(out, "\r")
	if out == "" {
		return Secret{}, fmt.Errorf("%s: the command printed nothing: %w", what, ErrNoSecret)
	}
	return NewSecret(out), nil
}
