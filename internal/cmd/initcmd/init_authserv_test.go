package initcmd

import (
	"strings"
	"testing"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/initcfg"
)

// TestInitPresetAuthserv: a provider preset gives the authserv_id, and
// init writes it into the config without logging in.
func TestInitPresetAuthserv(t *testing.T) {
	t.Parallel()
	for source, want := range map[string]string{
		"preset:gmail": "mx.google.com", "preset:fastmail": "*.messagingengine.com", "preset:icloud": "*.icloud.com",
		"preset:outlook": "protection.outlook.com", "preset:proton": "", "autoconfig": "",
	} {
		if got := appdoctor.PresetAuthservID(source); got != want {
			t.Errorf("appdoctor.PresetAuthservID(%q): got %q, want %q", source, got, want)
		}
	}
	s := &initSetup{Email: "ada@fastmail.com", Name: "Ada", Account: "personal", Source: "preset:fastmail", Model: "m", Mode: "review", APIKeyEnv: "K",
		IMAP:   initServer{Host: "imap.fastmail.com", Port: 993, Security: "tls", Username: "ada@fastmail.com"},
		SMTP:   initServer{Host: "smtp.fastmail.com", Port: 465, Security: "tls", Username: "ada@fastmail.com"},
		Secret: secretChoice{Kind: secretEnv, Value: "MAIL_PASS"}}
	data := initAuthserv(t.Context(), s, initcfg.Render(s), "/x/config.toml", false)
	if !strings.Contains(string(data), `authserv_id = "*.messagingengine.com"`) {
		t.Errorf("rendered config lacks the preset authserv_id:\n%s", data)
	}
}
