package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// streamEnd is the last line of a streamed answer, as every line type
// (streamLine, threadInputLine) spells it: the error that ended the walk,
// or the end. A stream that stops without either was cut short.
type streamEnd struct {
	Error *Error `json:"error,omitempty"`
	Done  bool   `json:"done,omitempty"`
}

// ndjsonLine is a line type of a stream of items of type T.
type ndjsonLine[T any] interface {
	// item is the line's item, if it carries one.
	item() (T, bool)
	end() streamEnd
}

func (l streamLine) item() (*store.MessageRecord, bool) { return l.Record, l.Record != nil }
func (l streamLine) end() streamEnd                     { return streamEnd{Error: l.Error, Done: l.Done} }

func (l threadInputLine) item() (mail.ThreadInput, bool) {
	if l.Input == nil {
		return mail.ThreadInput{}, false
	}
	return *l.Input, true
}
func (l threadInputLine) end() streamEnd { return streamEnd{Error: l.Error, Done: l.Done} }

// streamFlushEvery is how many lines go out between two flushes.
const streamFlushEvery = 64

// streamNDJSON answers r with JSON lines: walk calls emit with one line
// per item, then the stream ends with {"done":true}, or with {"error":…}
// when walk fails. The headers go out at once (a client's watchdog runs
// from then); the walk stops when the client goes away, and nothing more
// is written then.
func streamNDJSON[L any](w http.ResponseWriter, r *http.Request, walk func(emit func(L) error) error) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	n := 0
	err := walk(func(line L) error {
		if err := enc.Encode(line); err != nil {
			return err
		}
		if n++; n%streamFlushEvery == 0 {
			_ = rc.Flush()
		}
		return r.Context().Err()
	})
	if r.Context().Err() != nil {
		return
	}
	if err != nil {
		we, _ := wireError(err)
		_ = enc.Encode(streamEnd{Error: we})
		return
	}
	_ = enc.Encode(streamEnd{Done: true})
}

// readNDJSON posts in to path on the watcher, reads the lines
// streamNDJSON answers with and calls fn with each item, until the done
// line (nil) or an error line (that error, as the watcher sent it). An
// error from fn stops the reading and is returned as is. A line that does
// not decode, or the body ending before the done or error line
// (io.ErrUnexpectedEOF), is passed to cut, which says what was being read.
func readNDJSON[T any, L ndjsonLine[T]](ctx context.Context, c *Client, path string, in any,
	fn func(T) error, cut func(error) error) error {
	resp, err := c.do(ctx, http.MethodPost, path, nil, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var line L
		if err := dec.Decode(&line); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return cut(err)
		}
		switch end := line.end(); {
		case end.Error != nil:
			return end.Error
		case end.Done:
			return nil
		}
		if it, ok := line.item(); ok {
			if err := fn(it); err != nil {
				return err
			}
		}
	}
}
