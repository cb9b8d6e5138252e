package loadcache

import (
	"path/filepath"
	"testing"
)

// A file that extends names is an input of the load like the compose
// file: editing it is a miss, and the model is the edited one's.
func TestExtendedFileEditedMisses(t *testing.T) {
	dir := newApp(t, map[string]string{
		"compose.yaml":       "services:\n  web:\n    extends: {file: shared/common.yaml, service: base}\n  db:\n    image: postgres:16\n",
		"shared/common.yaml": "services:\n  base:\n    image: nginx:1.27\n    env_file: [base.env]\n",
		"shared/base.env":    "A=1\n",
	})
	c := testCache(t)
	req := baseRequest(dir)
	loadApp(t, c, req, Miss)
	loadApp(t, c, req, Hit)
	for _, edit := range []struct{ file, data, image, env string }{
		{"shared/common.yaml", "services:\n  base:\n    image: nginx:1.28\n    env_file: [base.env]\n", "nginx:1.28", "1"},
		{"shared/base.env", "A=2\n", "nginx:1.28", "2"},
	} {
		write(t, filepath.Join(dir, edit.file), edit.data)
		app := loadApp(t, c, req, Miss)
		if web := app.Services[1].Spec; web.Image != edit.image || web.Env["A"] != edit.env {
			t.Errorf("after editing %s: web image %q env %v, want %s and A=%s", edit.file, web.Image, web.Env, edit.image, edit.env)
		}
		loadApp(t, c, req, Hit)
	}
}
