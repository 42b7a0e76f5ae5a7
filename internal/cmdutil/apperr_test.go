package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/mailagent/mailagent/internal/app/apperr"
)

// TestReportAppErrorAsUserError: an application-tier error reaches the
// owner as a UserError would (its code, its message without the wrapping,
// its hint), wrapped or not; a plain error stays an unexpected failure.
func TestReportAppErrorAsUserError(t *testing.T) {
	t.Parallel()
	ae := &apperr.Error{Code: apperr.CodeUnreachable, Err: errors.New("account a: dial refused"), Hint: "try: mailagent doctor"}
	for _, err := range []error{ae, fmt.Errorf("watch: %w", ae)} {
		var buf bytes.Buffer
		if code := Report(&buf, err); code != ExitUnreachable {
			t.Errorf("Report(%v) = %d, want %d", err, code, ExitUnreachable)
		}
		if want := "mailagent: account a: dial refused\n  try: mailagent doctor\n"; buf.String() != want {
			t.Errorf("Report(%v) printed %q, want %q", err, buf.String(), want)
		}
		ue, ok := AsUserError(err)
		if !ok || ue.Code != apperr.CodeUnreachable || ue.Hint != ae.Hint || ue.Err != ae.Err {
			t.Errorf("AsUserError(%v) = %+v, %v", err, ue, ok)
		}
	}
	ue := &UserError{Code: ExitUsage, Err: errors.New("bad flag")}
	if got, ok := AsUserError(fmt.Errorf("x: %w", ue)); !ok || got != ue {
		t.Errorf("AsUserError lost the UserError: %+v, %v", got, ok)
	}
	if _, ok := AsUserError(errors.New("boom")); ok {
		t.Error("AsUserError took a plain error for an actionable one")
	}
	var buf bytes.Buffer
	if code := Report(&buf, errors.New("boom")); code != ExitFailure {
		t.Errorf("plain error: exit %d, want %d", code, ExitFailure)
	}
}
