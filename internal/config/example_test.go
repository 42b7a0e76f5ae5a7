package config_test

import (
	"fmt"

	"github.com/mailagent/mailagent/internal/config"
)

func ExampleParse() {
	cfg, err := config.Parse([]byte(`
[[accounts]]
name = "personal"
email = "ada@example.com"
  [accounts.imap]
  host = "imap.example.com"
  password_cmd = "pass show mail/ada"
  [accounts.smtp]
  host = "smtp.example.com"
  security = "starttls"
`), "/home/ada/.config/mailagent/config.toml", 0o600)
	if err != nil {
		fmt.Println(err)
		return
	}
	a := cfg.Accounts[0]
	fmt.Println(a.IMAP.Addr(), a.SMTP.Addr(), a.SMTP.PasswordCmd != "")
	fmt.Println(cfg.Policy.Mode, cfg.LLM.Model, cfg.LLM.APIKeyEnv)

	_, err = config.Parse([]byte(`[policy]
mode = "yolo"`), "/tmp/c.toml", 0o600)
	fmt.Println(err)
	// Output:
	// imap.example.com:993 smtp.example.com:587 true
	// review gemini-2.5-flash GEMINI_API_KEY
	// config /tmp/c.toml: accounts: no account is configured (fix: add an [[accounts]] table with name, email, [accounts.imap] and [accounts.smtp])
	// config /tmp/c.toml: policy.mode: "yolo" is not one of review, auto (fix: use "review" (never auto-send) or "auto")
}
