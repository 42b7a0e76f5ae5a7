package config

import (
	"slices"
	"strings"
	"testing"
)

func TestAllowDomains(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		policy  string
		want    []string
		problem string
	}{
		{"default empty", "", nil, ""},
		{"domains and a literal", `allow_domains = ["corp.internal", "[10.0.0.5]"]`, []string{"corp.internal", "[10.0.0.5]"}, ""},
		{"an address is not a domain", `allow_domains = ["root@localhost"]`, nil, "is not a domain"},
		{"empty entry", `allow_domains = [""]`, nil, "is not a domain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := validTOML
			if tc.policy != "" {
				src += "\n[policy]\n" + tc.policy + "\n"
			}
			cfg, err := Parse([]byte(src), "/tmp/config.toml", 0o600)
			if tc.problem == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !slices.Equal(cfg.Policy.AllowDomains, tc.want) {
					t.Fatalf("policy.allow_domains: got %q, want %q", cfg.Policy.AllowDomains, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "policy.allow_domains[0]") || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("got %v, want a policy.allow_domains[0] error saying %q", err, tc.problem)
			}
		})
	}
}
