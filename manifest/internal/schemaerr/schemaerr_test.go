package schemaerr

import (
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestLeavesAndMessages(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(`{
		"type": "object",
		"properties": {"a": {"type": ["string", "integer"]}, "n": {"type": "integer", "minimum": 1}},
		"additionalProperties": false
	}`))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	var verr *jsonschema.ValidationError
	if !errors.As(sch.Validate(map[string]any{"a": []any{}, "n": 0}), &verr) {
		t.Fatal("expected a validation error")
	}
	got := map[string]string{}
	for _, e := range Leaves(verr) {
		got[strings.Join(e.InstanceLocation, ".")] = Message(e.ErrorKind)
	}
	want := map[string]string{
		"a": "must be a string or an integer, got a list",
		"n": "must be greater than or equal to 1",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
}
