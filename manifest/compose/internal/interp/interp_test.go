package interp

import (
	"strings"
	"testing"
	"testing/fstest"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
)

func TestEnvironmentGivenOverDotenv(t *testing.T) {
	fsys := fstest.MapFS{"app/.env": {Data: []byte("TAG=1.0\nNAME=web-${TAG}\nPORT=80\n")}}
	var read []string
	c := &yamlpos.Collector{}
	env := Environment(c, fsys, "app", func(p string) string { return p }, map[string]string{"PORT": "8080"}, func(k string) { read = append(read, k) })
	if len(c.Errs) > 0 {
		t.Fatalf("errors: %v", c.Errs)
	}
	want := map[string]string{"TAG": "1.0", "NAME": "web-1.0", "PORT": "8080"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q (env %v)", k, env[k], v, env)
		}
	}
	if len(read) == 0 {
		t.Error("the names looked up were not reported")
	}
}

func TestEnvironmentBadDotenvIsReportedWithItsFile(t *testing.T) {
	fsys := fstest.MapFS{"app/.env": {Data: []byte("GOOD=1\nnot a line\n")}}
	c := &yamlpos.Collector{}
	Environment(c, fsys, "app", func(p string) string { return "repo/" + p }, nil, func(string) {})
	if len(c.Errs) != 1 || c.Errs[0].Pos.File != "repo/app/.env" {
		t.Fatalf("want one error in repo/app/.env, got %v", c.Errs)
	}
}

func TestCheckReportsWithPositions(t *testing.T) {
	var doc yaml.Node
	src := "services:\n  web:\n    image: \"app:${TAG}\"\n    command: \"${REQ:?set REQ}\"\n    labels:\n      cost: \"$$5 ${FREE:-x}\"\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	errs, warns := &yamlpos.Collector{}, &yamlpos.Collector{}
	in := &Interpolator{Env: map[string]string{}, Errs: errs, Warnings: warns}
	in.Check("compose.yaml", doc.Content[0], "", 0)
	if len(errs.Errs) != 1 || errs.Errs[0].Pos.Line != 4 || !strings.Contains(errs.Errs[0].Msg, "required variable REQ is not set: set REQ") {
		t.Errorf("errors: %v", errs.Errs)
	}
	if len(warns.Errs) != 1 || warns.Errs[0].Pos.Line != 3 || !strings.Contains(warns.Errs[0].Msg, "variable TAG is not set") {
		t.Errorf("warnings: %v", warns.Errs)
	}
}

func TestInterpolateDocCasts(t *testing.T) {
	in := &Interpolator{Env: map[string]string{"N": "3", "BAD": "three"}}
	doc := map[string]any{"services": map[string]any{
		"a": map[string]any{"deploy": map[string]any{"replicas": "${N}"}},
		"b": map[string]any{"deploy": map[string]any{"replicas": "${BAD}"}},
	}}
	errs := in.InterpolateDoc(doc)
	a := doc["services"].(map[string]any)["a"].(map[string]any)["deploy"].(map[string]any)["replicas"]
	if a != 3 && a != int64(3) && a != uint64(3) {
		t.Errorf("replicas of a = %#v, want the number 3", a)
	}
	if len(errs) != 1 || strings.Join(errs[0].Path, ".") != "services.b.deploy.replicas" || errs[0].Msg != `must be a number, got "three"` {
		t.Errorf("cast errors: %+v", errs)
	}
	if len(in.UsedCasts) == 0 {
		t.Error("the casts used were not recorded")
	}
}
