package initcmd

import (
	"context"
	"strings"
	"unicode"

	"github.com/mailagent/mailagent/internal/prompter"
)

// The system keyring, for the password_keyring and api_key_keyring
// choices: probed during the interview (setup.KeyringAvailable), written
// just before the config file (setup.StoreInKeyring), undone if that
// fails.

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
// (stored by setup.StoreInKeyring just before the file is written; never
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
