package yamlpos

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSplitPath(t *testing.T) {
	got := SplitPath(`a.b[2]["odd.key"].c`)
	want := []PathPart{{Key: "a", Index: -1}, {Key: "b", Index: -1}, {Index: 2}, {Key: "odd.key", Index: -1}, {Key: "c", Index: -1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestWalkPathThroughMergeKeys(t *testing.T) {
	var doc yaml.Node
	src := "base: &b\n  image: x\n  ports: [80, 443]\nsvc:\n  <<: *b\n  name: y\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	k, v, ok := WalkPath(root, SplitPath("svc.ports[1]"))
	if !ok || k != nil || v.Value != "443" || v.Line != 3 {
		t.Fatalf("svc.ports[1]: got k=%v v=%+v ok=%v", k, v, ok)
	}
	if _, _, ok := WalkPath(root, SplitPath("svc.missing")); ok {
		t.Fatal("svc.missing found")
	}
	_, svc := Child(root, "svc")
	r := Resolved(svc, 0)
	var got map[string]any
	if err := r.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["image"] != "x" || got["name"] != "y" {
		t.Fatalf("resolved: %v", got)
	}
	field, pos, n := NodePath("f.yaml", root, []string{"svc", "ports", "0"})
	if field != "svc.ports[0]" || pos.Line != 3 || n == nil || n.Value != "80" {
		t.Fatalf("NodePath: %q %+v %v", field, pos, n)
	}
}
