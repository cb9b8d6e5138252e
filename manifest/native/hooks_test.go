package native_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

// postStart and preStop are the service's hooks as written; a hook needs
// a command, and a job has none.
func TestLoadLifecycleHooks(t *testing.T) {
	a, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n" +
		"  postStart: [{command: [chown, '1001', /data], user: root, env: {A: '1'}}]\n" +
		"  preStop: [{command: [./flush], workingDir: /app}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	spec := a.Services[0].Spec
	if want := []manifest.Hook{{Command: []string{"chown", "1001", "/data"}, User: "root", Env: map[string]string{"A": "1"}}}; !reflect.DeepEqual(spec.PostStart, want) {
		t.Errorf("postStart %+v, want %+v", spec.PostStart, want)
	}
	if want := []manifest.Hook{{Command: []string{"./flush"}, WorkingDir: "/app"}}; !reflect.DeepEqual(spec.PreStop, want) {
		t.Errorf("preStop %+v, want %+v", spec.PreStop, want)
	}

	_, err = loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  preStop: [{user: root}]\n" +
		"---\napiVersion: driftless.dev/v1\nkind: Job\nmetadata: {name: migrate}\nspec:\n  type: pre-sync\n  image: x\n  postStart: [{command: [x]}]\n"})
	want := []string{
		"a.yaml:7:13: spec.preStop[0].command: a hook needs a command: the program and its arguments, as a list",
		"a.yaml:15:3: spec.postStart: a Job runs one container to completion: remove postStart",
	}
	if got := loadtest.ErrorLines(t, err); !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", joinLines(got), joinLines(want))
	}
}
