package main

import (
	"errors"
	"fmt"

	"github.com/zalando/go-keyring"

	"github.com/mailagent/mailagent/internal/config"
)

// The system keyring, for the password_keyring choice: probed during the
// interview, written just before the config file, undone if that fails.

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

// storeInKeyring stores the password under config.KeyringService and the
// endpoints' keyring users, just before the file is written, so an
// aborted wizard leaves nothing behind.
func storeInKeyring(s *initSetup) error {
	if s.Secret.Kind != secretKeyring {
		return nil
	}
	for _, u := range keyringUsers(s) {
		if err := keyring.Set(config.KeyringService, u, s.Secret.Password); err != nil {
			forgetKeyring(s)
			return &UserError{Code: ExitFailure, Err: fmt.Errorf("store the password in the keyring (service %q, user %q): %w; nothing was written", config.KeyringService, u, err),
				Hint: "run `mailagent init` again and choose another password source"}
		}
	}
	return nil
}

func forgetKeyring(s *initSetup) {
	if s.Secret.Kind != secretKeyring {
		return
	}
	for _, u := range keyringUsers(s) {
		_ = keyring.Delete(config.KeyringService, u)
	}
}
