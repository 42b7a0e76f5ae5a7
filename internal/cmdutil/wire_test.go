package cmdutil

import (
	"context"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/llm"
)

// TestWireEnvCarriesTheFactory: the wiring every command builds its
// agent over takes the Factory's clock, its model maker (with the
// [llm.classify] and [llm.draft] settings) and its defence switch, so
// that what a test sets on the Factory reaches triage, watch, replay and
// the service alike.
func TestWireEnvCarriesTheFactory(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := New(ios)
	clock := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	f.Now = func() time.Time { return clock }
	var asked []string
	f.NewModel = func(_ context.Context, cfg *config.Config) (llm.Model, error) {
		asked = append(asked, cfg.LLM.Model)
		return nil, nil
	}
	cfg := &config.Config{LLM: config.LLM{Model: "base", Draft: config.LLMTask{Model: "drafter"}}}
	for _, off := range []bool{false, true} {
		f.IncomingCheckOff = off
		env := f.WireEnv(cfg)
		if env.IncomingCheckOff != off {
			t.Errorf("Factory.IncomingCheckOff %v: env has %v", off, env.IncomingCheckOff)
		}
		if got := env.Now(); !got.Equal(clock) {
			t.Errorf("env clock %v, want the Factory's %v", got, clock)
		}
		if env.DialIMAP == nil || env.SMTP == nil || env.Logger == nil {
			t.Error("env lacks the logins or the log")
		}
	}
	env := f.WireEnv(cfg)
	classify, err := env.ClassifyModel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.DraftModel(context.Background(), classify); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || asked[0] != "base" || asked[1] != "drafter" {
		t.Fatalf("models built: %q, want the classify then the draft settings [base drafter]", asked)
	}
}
