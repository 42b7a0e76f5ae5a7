package root

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/cmd/doctor"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

// TestNewCmdDoctorFlags: the flags reach the options, and so do the
// Factory's streams, config path, state directory, clock and the checks'
// way out (read when the command runs: the global flags are parsed by
// then); an argument is refused.
func TestNewCmdDoctorFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	var got *doctor.DoctorOptions
	cmd := doctor.NewCmdDoctor(f, func(_ context.Context, o *doctor.DoctorOptions) error { got = o; return nil })
	f.ConfigPath, f.StateDir = "/x/config.toml", "/x/state"
	cmd.SetArgs([]string{"--json", "--account", "work", "--no-model", "--fix", "--repair"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.JSON || got.Account != "work" || !got.NoModel || !got.Fix || !got.Repair {
		t.Fatalf("runF got %+v, want every flag set", got)
	}
	if got.IO != ios || got.ConfigPath != "/x/config.toml" || got.StateDir != "/x/state" || got.Now == nil || got.Config == nil {
		t.Errorf("options lack the factory's values: %+v", got)
	}
	if got.Env.IMAPOptions == nil || got.Env.SMTPOptions == nil || got.Env.NewModel == nil {
		t.Errorf("options lack the live logins and model: %+v", got.Env)
	}
	cmd = doctor.NewCmdDoctor(f, func(context.Context, *doctor.DoctorOptions) error { t.Error("ran with an argument"); return nil })
	cmd.SetArgs([]string{"extra"})
	if err := cmd.Execute(); err == nil {
		t.Error("an argument was accepted")
	}
}

// TestDoctorConfigDoesNotLoad: a config that does not parse is one
// failed check (text or JSON) and a usage error (exit 2), and nothing
// is dialled.
func TestDoctorConfigDoesNotLoad(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("[[accounts]\nname = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dial := appdoctor.Env{}
	for _, asJSON := range []bool{false, true} {
		ios, _, out, _ := iostreams.Test()
		err := doctor.Run(context.Background(), &doctor.DoctorOptions{IO: ios, ConfigPath: path, Now: time.Now, Env: dial, JSON: asJSON})
		var ue *cmdutil.UserError
		if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage {
			t.Fatalf("json=%v: error %v, want a usage error", asJSON, err)
		}
		if cmdutil.Report(&strings.Builder{}, err) != cmdutil.ExitUsage {
			t.Errorf("json=%v: exit code is not %d", asJSON, cmdutil.ExitUsage)
		}
		if asJSON {
			var checks []map[string]any
			if err := json.Unmarshal(out.Bytes(), &checks); err != nil || len(checks) != 1 || checks[0]["status"] != "fail" {
				t.Errorf("json: %v %q, want one failed check", err, out.String())
			}
			continue
		}
		if !strings.HasPrefix(out.String(), "FAIL  config: ") || !strings.Contains(out.String(), "      fix: ") {
			t.Errorf("text report %q, want the failed config check and its fix", out.String())
		}
	}
}

// TestPrintChecksHostileText: details and fixes carry server text
// (greetings, NO replies, folder names); none of the terminal controls a
// hostile server writes reaches the report. Control: the same text
// printed raw trips every probe.
func TestPrintChecksHostileText(t *testing.T) {
	t.Parallel()
	hostile := map[string]string{
		"ESC": "\x1b[2J\x1b]0;owned\x07", "BEL": "\x07", "CR": "ok\rFAIL  forged", "RLO": "\u202etxt.exe",
		"CSI": "\u009b31m", "newline": "fine\nPASS  smtp: forged",
	}
	needles := map[string]string{"ESC": "\x1b", "BEL": "\x07", "CR": "\r", "RLO": "\u202e", "CSI": "\u009b", "newline": "\nPASS  smtp: forged"}
	var checks []appdoctor.Check
	for _, text := range hostile {
		checks = append(checks, appdoctor.Check{Name: "imap a: " + text, Status: "fail", Detail: text, Fix: text})
	}
	var raw strings.Builder
	for _, c := range checks {
		raw.WriteString(c.Name + c.Detail + c.Fix)
	}
	var out strings.Builder
	doctor.PrintChecks(&out, checks, false)
	tried, through, control := 0, 0, 0
	for what, needle := range needles {
		tried++
		if strings.Contains(out.String(), needle) {
			through++
			t.Errorf("%s reached the report:\n%q", what, out.String())
		}
		if strings.Contains(raw.String(), needle) {
			control++
		}
	}
	t.Logf("hostile server text: %d tried, %d through", tried, through)
	if through != 0 {
		t.Errorf("%d of %d attacks got through", through, tried)
	}
	if control != tried {
		t.Errorf("control: the raw text trips %d of %d probes", control, tried)
	}
}

// TestRepairHealthyDatabase: --repair leaves a healthy database alone
// and says so (text and JSON); without a database it is a usage error
// naming the path.
func TestRepairHealthyDatabase(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{StateDir: t.TempDir()}
	opts := func(asJSON bool) *doctor.DoctorOptions {
		ios, _, _, _ := iostreams.Test()
		return &doctor.DoctorOptions{IO: ios, Repair: true, JSON: asJSON,
			Config: func() (*config.Config, error) { return cfg, nil }}
	}
	err := doctor.Run(context.Background(), opts(false))
	var ue *cmdutil.UserError
	if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage || !strings.Contains(err.Error(), cmdutil.DBPath(cfg)) {
		t.Fatalf("no database: %v, want a usage error naming %s", err, cmdutil.DBPath(cfg))
	}
	st, err := store.Open(cmdutil.DBPath(cfg), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, asJSON := range []bool{false, true} {
		o := opts(asJSON)
		if err := doctor.Run(context.Background(), o); err != nil {
			t.Fatalf("json=%v: %v", asJSON, err)
		}
		got := o.IO.Out.(interface{ String() string }).String()
		want := "the state database " + cmdutil.DBPath(cfg) + " is healthy; nothing to repair\n"
		if asJSON {
			var v struct {
				Path    string `json:"path"`
				Healthy bool   `json:"healthy"`
			}
			if err := json.Unmarshal([]byte(got), &v); err != nil || !v.Healthy || v.Path != cmdutil.DBPath(cfg) {
				t.Errorf("json: %v %q", err, got)
			}
			continue
		}
		if got != want {
			t.Errorf("text: %q, want %q", got, want)
		}
	}
}
