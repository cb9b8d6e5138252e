package engineerr

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/moby/moby/api/types/jsonstream"
)

// FromJSONStream drains an engine's JSON progress stream (a pull's, an
// import's) and returns the first error message in it.
func FromJSONStream(r io.Reader) error {
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
		if m.Error != nil && m.Error.Message != "" {
			return errors.New(m.Error.Message)
		}
		if m.ErrorMessage != "" {
			return errors.New(m.ErrorMessage)
		}
	}
}
