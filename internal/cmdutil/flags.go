package cmdutil

import (
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/humantime"
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

// PositiveDuration reads a flag's positive duration in the one grammar
// (humantime.ParseDuration): "12h", "7d", "90m".
func PositiveDuration(s string) (time.Duration, error) {
	d, err := humantime.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (%s)", s, humantime.DurationGrammar)
	}
	return d, nil
}
