package engineerr

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/moby/moby/api/types/jsonstream"
)

// StreamError is the error message an engine's JSON stream ended with: the
// operation's own failure (a build step, a pull), not the connection's.
type StreamError struct{ Msg string }

func (e *StreamError) Error() string { return e.Msg }

// ReadJSONStream drains an engine's JSON stream (a build's, a pull's, an
// import's), passing each message's stream text to onText when it is not
// nil. It returns nil at the stream's end, a *StreamError at the first
// error message in it, or the read's own error.
func ReadJSONStream(r io.Reader, onText func(string)) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			jsonstream.Message
			ErrorMessage string `json:"error"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if onText != nil {
			onText(m.Stream)
		}
		msg := m.ErrorMessage
		if m.Error != nil && m.Error.Message != "" {
			msg = m.Error.Message
		}
		if msg != "" {
			return &StreamError{Msg: msg}
		}
	}
}

// FromJSONStream drains an engine's JSON progress stream and returns the
// first error message in it.
func FromJSONStream(r io.Reader) error { return ReadJSONStream(r, nil) }
