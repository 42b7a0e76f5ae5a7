package cmdutil

import (
	"strings"

	"github.com/mailagent/mailagent/internal/config"
)

// PickAccounts is the accounts an --account flag selects: the one named,
// or every configured account when name is empty. An unknown name is a
// usage error that lists the configured ones.
func PickAccounts(cfg *config.Config, name string) ([]*config.Account, error) {
	if name != "" {
		a, ok := cfg.Account(name)
		if !ok {
			var names []string
			for _, a := range cfg.Accounts {
				names = append(names, a.Name)
			}
			return nil, UsageErr("no account %q (configured: %s)", name, strings.Join(names, ", "))
		}
		return []*config.Account{a}, nil
	}
	out := make([]*config.Account, len(cfg.Accounts))
	for i := range cfg.Accounts {
		out[i] = &cfg.Accounts[i]
	}
	return out, nil
}
