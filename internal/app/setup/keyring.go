package setup

import (
	"errors"
	"fmt"

	"github.com/zalando/go-keyring"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"
)

// The system keyring, for the password_keyring and api_key_keyring
// choices: probed during the interview, written just before the config
// file, undone if that fails.

// keyringProbeUser is looked up, never written, to learn whether a keyring
// answers at all.
const keyringProbeUser = "mailagent-init-probe"

// KeyringAvailable reports whether the system keyring answers. A missing
// entry is an answer; no D-Bus secret service (or a locked-out keychain)
// is not.
func KeyringAvailable() error {
	_, err := keyring.Get(config.KeyringService, keyringProbeUser)
	if err == nil || errors.Is(err, keyring.ErrNotFound) {
		return nil
	}
	return err
}

// keyringUsers returns the keyring users the config will read: the IMAP
// one, and the SMTP one when SMTP has its own login.
func keyringUsers(s *initcfg.Setup) []string {
	users := []string{s.Account + "/imap"}
	if s.SMTPOwnLogin() {
		users = append(users, s.Account+"/smtp")
	}
	return users
}

// StoreInKeyring stores what the answers put in the keyring, just before
// the file is written, so an aborted wizard leaves nothing behind: the
// mail password under config.KeyringService and the endpoints' keyring
// users, and the model's API key under the [llm] keyring user. On a
// failure, what it stored is removed again, and the error names the
// entry ("…; nothing was written").
func StoreInKeyring(s *initcfg.Setup) error {
	for _, e := range keyringEntries(s) {
		if err := keyring.Set(config.KeyringService, e.user, e.secret); err != nil {
			ForgetKeyring(s)
			return fmt.Errorf("store the %s in the keyring (service %q, user %q): %w; nothing was written", e.what, config.KeyringService, e.user, err)
		}
	}
	return nil
}

// ForgetKeyring removes what StoreInKeyring stored for s.
func ForgetKeyring(s *initcfg.Setup) {
	for _, e := range keyringEntries(s) {
		_ = keyring.Delete(config.KeyringService, e.user)
	}
}

// keyringEntry is one secret init puts in the keyring.
type keyringEntry struct{ what, user, secret string }

func keyringEntries(s *initcfg.Setup) []keyringEntry {
	var out []keyringEntry
	if s.Secret.Kind == initcfg.SecretKeyring {
		for _, u := range keyringUsers(s) {
			out = append(out, keyringEntry{"password", u, s.Secret.Password})
		}
	}
	if s.APIKey.Kind == initcfg.SecretKeyring {
		out = append(out, keyringEntry{"API key", config.LLM{}.KeyringUser(), s.APIKey.Password})
	}
	return out
}
