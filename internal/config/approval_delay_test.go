package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestApprovalDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		policy  string
		want    time.Duration
		problem string
	}{
		{"default", "", DefaultApprovalDelay, ""},
		{"set", `approval_delay = "30s"`, 30 * time.Second, ""},
		{"zero disables", `approval_delay = "0s"`, 0, ""},
		{"negative", `approval_delay = "-5s"`, 0, "is negative"},
		{"no unit", `approval_delay = 5`, 0, `"5" is not a duration`},
		{"not an undo window", `approval_delay = "2h"`, 0, "longer than an hour"},
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
				if got := cfg.Policy.ApprovalDelay.D(); got != tc.want {
					t.Fatalf("policy.approval_delay: got %v, want %v", got, tc.want)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "policy.approval_delay") || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("got %v, want a policy.approval_delay error saying %q", err, tc.problem)
			}
		})
	}
}
