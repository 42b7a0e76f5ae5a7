package cmdutil

import (
	"errors"

	"github.com/mailagent/mailagent/internal/app/apperr"
)

// AsUserError finds in err's chain the first error the owner can act on:
// a *UserError, or an application-tier *apperr.Error (internal/app knows
// nothing of this package) seen as the UserError with the same code,
// message and hint. It is the one bridge between the two: Report and any
// command that treats an actionable error apart use it.
func AsUserError(err error) (*UserError, bool) {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue, true
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return &UserError{Code: ae.Code, Err: ae.Err, Hint: ae.Hint}, true
	}
	return nil, false
}
