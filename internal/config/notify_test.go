package config

import (
	"strings"
	"testing"
)

// TestNotifyConfig: desktop notifications are off unless [notify] desktop
// = true; a misspelt key is an unknown-key error that suggests the right
// one; on a system internal/notify cannot reach a desktop on, turning
// them on is a field error naming notify.desktop.
func TestNotifyConfig(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(validTOML), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Notify.Desktop {
		t.Error("default: desktop notifications on, want off")
	}
	cfg, err = Parse([]byte(validTOML+"\n[notify]\ndesktop = true\n"), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Notify.Desktop {
		t.Error("[notify] desktop = true: got off")
	}
	_, err = Parse([]byte(validTOML+"\n[notify]\ndesktp = true\n"), "/x/config.toml", 0o600)
	if err == nil || !strings.Contains(err.Error(), "notify.desktp") || !strings.Contains(err.Error(), `"desktop"`) {
		t.Errorf("misspelt key: got %v, want an unknown-key error suggesting desktop", err)
	}
	_, err = Parse([]byte(validTOML+"\n[notify]\ndesktop = \"yes\"\n"), "/x/config.toml", 0o600)
	if err == nil || !strings.Contains(err.Error(), "desktop") {
		t.Errorf(`desktop = "yes": got %v, want an error naming the key`, err)
	}

	for goos, ok := range map[string]bool{"linux": true, "darwin": true, "freebsd": true, "windows": false, "plan9": false} {
		p := &problems{file: "/x/config.toml"}
		Notify{Desktop: true}.validate(p, goos)
		if got := len(p.errs) == 0; got != ok {
			t.Errorf("desktop = true on %s: accepted %v, want %v (%v)", goos, got, ok, p.errs)
		}
		if !ok && !strings.Contains(p.errs[0].Error(), "notify.desktop") {
			t.Errorf("%s: the error does not name notify.desktop: %v", goos, p.errs[0])
		}
		p = &problems{file: "/x/config.toml"}
		Notify{}.validate(p, goos)
		if len(p.errs) != 0 {
			t.Errorf("desktop = false on %s: %v", goos, p.errs)
		}
	}
}
