package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/zalando/go-keyring"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/prompter"
)

// The system keyring, for the password_keyring and api_key_keyring
// choices: probed during the interview, written just before the config
// file, undone if that fails.

// keyringProbeUser is looked up, never written, to learn whether a keyring
// answers at all.
const keyringProbeUser = "mailagent-init-probe"

// keyringAvailable reports whether the system keyring answers. A missing
// entry is an answer; no D-Bus secret service (or a locked-out keychain)
// is not.
func keyringAvailable() error {
	_, err := keyring.Get(config.KeyringService, keyringProbeUser)
	if err == nil || errors.Is(err, keyring.ErrNotFound) {
		return nil
	}
	return err
}

// keyringUsers returns the keyring users the config will read: the IMAP
// one, and the SMTP one when SMTP has its own login.
func keyringUsers(s *initSetup) []string {
	users := []string{s.Account + "/imap"}
	if s.SMTPOwnLogin() {
		users = append(users, s.Account+"/smtp")
	}
	return users
}

// storeInKeyring stores what the answers put in the keyring, just before
// the file is written, so an aborted wizard leaves nothing behind: the
// mail password under config.KeyringService and the endpoints' keyring
// users, and the model's API key under the [llm] keyring user. On a
// failure, what it stored is removed again.
func storeInKeyring(s *initSetup) error {
	for _, e := range keyringEntries(s) {
		if err := keyring.Set(config.KeyringService, e.user, e.secret); err != nil {
			forgetKeyring(s)
			return &UserError{Code: ExitFailure, Err: fmt.Errorf("store the %s in the keyring (service %q, user %q): %w; nothing was written", e.what, config.KeyringService, e.user, err),
				Hint: "run `mailagent init` again and choose another source for it"}
		}
	}
	return nil
}

func forgetKeyring(s *initSetup) {
	for _, e := range keyringEntries(s) {
		_ = keyring.Delete(config.KeyringService, e.user)
	}
}

// keyringEntry is one secret init puts in the keyring.
type keyringEntry struct{ what, user, secret string }

func keyringEntries(s *initSetup) []keyringEntry {
	var out []keyringEntry
	if s.Secret.Kind == secretKeyring {
		for _, u := range keyringUsers(s) {
			out = append(out, keyringEntry{"password", u, s.Secret.Password})
		}
	}
	if s.APIKey.Kind == secretKeyring {
		out = append(out, keyringEntry{"API key", config.LLM{}.KeyringUser(), s.APIKey.Password})
	}
	return out
}

// apiKeyKeyring is the API-key menu's keyring choice (api_key_keyring).
const apiKeyKeyring = "keyring"

// apiKeyKeyringChoice is the keyring item of an API-key menu. It is
// always offered, last, so the menu never renumbers; when the keyring
// does not answer its label says so (and askKeyringAPIKey refuses it).
func apiKeyKeyringChoice(keyringErr error) prompter.Choice {
	if keyringErr != nil {
		return prompter.Choice{Key: apiKeyKeyring, Label: "the system keyring: not available here"}
	}
	return prompter.Choice{Key: apiKeyKeyring, Label: "the system keyring: type it once now, mailagent stores it there (api_key_keyring)"}
}

// askKeyringAPIKey asks for the API key to keep in the system keyring
// (stored by storeInKeyring just before the file is written; never
// printed). It returns false, having said why, when the keyring is not
// available or the key cannot be one: the caller shows its menu again.
func askKeyringAPIKey(ctx context.Context, p Prompter, s *initSetup, keyringErr error) (bool, error) {
	if keyringErr != nil {
		p.Say("  The system keyring is not available here (%s). Choose another source.\n", initFirstLine(keyringErr))
		return false, nil
	}
	key, err := p.Password(ctx, "API key (not shown)")
	if err != nil {
		return false, err
	}
	key = strings.TrimSpace(key)
	switch {
	case key == "":
		p.Say("  No key was typed. Choose again.\n")
		return false, nil
	case strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		// A pasted shell line ("export KEY=…") or two keys: never echoed.
		p.Say("  That is not an API key (it holds spaces or control characters); it was not kept. Choose again.\n")
		return false, nil
	}
	s.APIKey = secretChoice{Kind: secretKeyring, Password: key}
	s.APIKeyEnv, s.APIKeyCmd = "", ""
	return true, nil
}
