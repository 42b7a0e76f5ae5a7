package cmdutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestConfigMissingIsAUsageErrorWithTheInitHint: a config file that does
// not exist exits 2 and points at `mailagent init`; the answer is
// remembered (the file is read once).
func TestConfigMissingIsAUsageErrorWithTheInitHint(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := New(ios)
	f.ConfigPath = filepath.Join(t.TempDir(), "none.toml")
	_, err := f.Config()
	var ue *UserError
	if !errors.As(err, &ue) || ue.Code != ExitUsage || !strings.Contains(ue.Hint, "mailagent init") {
		t.Fatalf("got %v, want a usage error hinting at init", err)
	}
	if _, err2 := f.Config(); err2 != err {
		t.Fatalf("second Config: got %v, want the same error %v", err2, err)
	}
}

// TestConfigStateDirOverride: --state-dir wins over the file's state_dir,
// and OpenStore creates it.
func TestConfigStateDirOverride(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.toml")
	cfgText := `[[accounts]]
name = "work"
email = "ada@example.com"
[accounts.imap]
host = "127.0.0.1"
port = 1143
security = "insecure"
username = "ada@example.com"
password_env = "MA_NOPE"
[accounts.smtp]
host = "127.0.0.1"
port = 1025
security = "insecure"
username = "ada@example.com"
password_env = "MA_NOPE"
`
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	f := New(ios)
	defer f.Close()
	f.ConfigPath, f.StateDir = cfgPath, filepath.Join(dir, "state")
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != f.StateDir {
		t.Fatalf("state dir %q, want the override %q", cfg.StateDir, f.StateDir)
	}
	st, err := f.OpenStore(false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if _, err := os.Stat(DBPath(cfg)); err != nil {
		t.Fatalf("no database at %s: %v", DBPath(cfg), err)
	}
}

// TestPrompterIsOnePerFactory: every command of one run asks through the
// same Prompter (one reader of stdin), built on first use over In and
// ErrOut.
func TestPrompterIsOnePerFactory(t *testing.T) {
	t.Parallel()
	ios, in, _, errOut := iostreams.Test()
	in.WriteString("y\nn\n")
	f := New(ios)
	defer f.Close()
	p := f.Prompter()
	if p != f.Prompter() {
		t.Fatal("two prompters in one factory")
	}
	first, err := p.Confirm("one?", false)
	if err != nil || !first {
		t.Fatalf("first answer: %v, %v; want yes", first, err)
	}
	second, err := f.Prompter().Confirm("two?", true)
	if err != nil || second {
		t.Fatalf("second answer: %v, %v; want no (the second line, not lost to a buffer)", second, err)
	}
	if errOut.String() != "one? y/N: two? Y/n: " {
		t.Fatalf("questions on stderr: %q", errOut.String())
	}
}
