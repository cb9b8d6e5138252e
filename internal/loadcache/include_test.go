package loadcache

import (
	"path/filepath"
	"testing"
)

// A file that include names, and the .env of its directory, are inputs of
// the load like the compose file: editing one is a miss, and the model is
// the edited one's.
func TestIncludedFileEditedMisses(t *testing.T) {
	dir := newApp(t, map[string]string{
		"compose.yaml":    "include: [services/db.yml]\nservices:\n  web:\n    image: nginx:1.27\n",
		"services/db.yml": "services:\n  db:\n    image: postgres:${PG}\n    env_file: [db.env]\n",
		"services/.env":   "PG=16\n",
		"services/db.env": "A=1\n",
	})
	c := testCache(t)
	req := baseRequest(dir)
	loadApp(t, c, req, Miss)
	loadApp(t, c, req, Hit)
	for _, edit := range []struct{ file, data, image, env string }{
		{"services/db.yml", "services:\n  db:\n    image: postgres:${PG}-alpine\n    env_file: [db.env]\n", "postgres:16-alpine", "1"},
		{"services/.env", "PG=17\n", "postgres:17-alpine", "1"},
		{"services/db.env", "A=2\n", "postgres:17-alpine", "2"},
	} {
		write(t, filepath.Join(dir, edit.file), edit.data)
		app := loadApp(t, c, req, Miss)
		if db := app.Services[0].Spec; db.Image != edit.image || db.Env["A"] != edit.env {
			t.Errorf("after editing %s: db image %q env %v, want %s and A=%s", edit.file, db.Image, db.Env, edit.image, edit.env)
		}
		loadApp(t, c, req, Hit)
	}
}
