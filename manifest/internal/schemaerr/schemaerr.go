// Package schemaerr turns a JSON schema validation error into messages a
// person can act on: the library reports one tree of causes in schema terms,
// and a manifest's author wants every failing place, each in plain words.
package schemaerr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Leaves is one error per failing place (see schemaLeaves). A property
// that additionalProperties: false refuses is dropped where the same place
// fails otherwise: a known attribute with a bad value also fails "no other
// attributes", and the type error says enough.
func Leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var leaves []*jsonschema.ValidationError
	schemaLeaves(e, &leaves)
	failed := map[string]bool{}
	for _, e := range leaves {
		if _, ok := e.ErrorKind.(*kind.FalseSchema); !ok {
			failed[strings.Join(e.InstanceLocation, "\x00")] = true
		}
	}
	var out []*jsonschema.ValidationError
	for _, e := range leaves {
		if _, ok := e.ErrorKind.(*kind.FalseSchema); ok && failed[strings.Join(e.InstanceLocation, "\x00")] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// schemaLeaves collects one error per failing place: every leaf, except
// that of the alternatives of a oneOf/anyOf only the most specific counts
// (as compose-go reports it).
func schemaLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	switch e.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		if len(e.Causes) > 0 {
			*out = append(*out, mostSpecific(e))
			return
		}
	}
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, cause := range e.Causes {
		schemaLeaves(cause, out)
	}
}

func mostSpecific(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return e
	}
	var best *jsonschema.ValidationError
	for _, cause := range e.Causes {
		cause = mostSpecific(cause)
		if specificity(cause) > specificity(best) {
			best = cause
		}
	}
	return best
}

func specificity(e *jsonschema.ValidationError) int {
	if e == nil {
		return -1
	}
	if _, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		return len(e.InstanceLocation) + 1
	}
	return len(e.InstanceLocation)
}

// Message says what a failure of one place means, in the words of
// driftless's other errors ("must be a mapping, got a list"); kinds without
// their own wording keep the library's English text.
func Message(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("must be %s, got %s", humanTypes(k.Want), humanType(k.Got))
	case *kind.Minimum:
		return fmt.Sprintf("must be greater than or equal to %s", k.Want.Num())
	case *kind.Maximum:
		return fmt.Sprintf("must be less than or equal to %s", k.Want.Num())
	}
	return k.LocalizedString(printer)
}

var printer = message.NewPrinter(language.English)

func humanTypes(want []string) string {
	h := make([]string, len(want))
	for i, w := range want {
		h[i] = humanType(w)
	}
	slices.Sort(h)
	if len(h) == 1 {
		return h[0]
	}
	return strings.Join(h[:len(h)-1], ", ") + " or " + h[len(h)-1]
}

func humanType(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "string":
		return "a string"
	case "integer":
		return "an integer"
	case "number":
		return "a number"
	case "boolean":
		return "a boolean"
	case "null":
		return "null"
	}
	return t
}
