package cmdutil

import (
	"encoding/json"
	"io"
)

// WriteJSON is the one --json writer: v (a type of internal/app/view)
// indented by two spaces, one value per call, ending in a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
