package yamlpos

import (
	"encoding/json"
	"fmt"

	k8syaml "sigs.k8s.io/yaml"
)

// Values as yaml.v3 decodes them into any (and as the Walker returns them):
// maps, lists and scalars, whatever the front end.

// StringKeys turns any map[any]any yaml.v3 produced into map[string]any;
// non-string keys were already reported.
func StringKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = StringKeys(e)
		}
		return t
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = StringKeys(e)
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = StringKeys(e)
		}
		return t
	}
	return v
}

// DeepMerge merges src into dst: mappings key by key, anything else
// replaced.
func DeepMerge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				DeepMerge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// DecodeStrict decodes a checked value into a raw type, as both front ends
// do after the walker (the native documents, compose's x-driftless).
func DecodeStrict(v any, target any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return k8syaml.UnmarshalStrict(js, target)
}
