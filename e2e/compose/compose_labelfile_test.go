package compose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeLabelFile: the labels of label_file reach the container, with
// labels: winning, and a changed label file replaces the replica as a
// changed label does.
func TestComposeLabelFile(t *testing.T) {
	t.Parallel()
	img := builtImage(t, "shop/web:1")
	app := testenv.UniqueApp(t)
	cli := newCLIDir(t, app, map[string]string{
		"compose.yaml": fmt.Sprintf(`services:
  web:
    image: %s
    label_file: ./web.labels
    labels: {com.example.team: shop}
`, img),
		"web.labels": "com.example.team=ignored\ncom.example.tier=front\n",
	})
	if out, code := cli.run(nil, "apply"); code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	c := app + "-web-1"
	label := func(k string) string {
		return strings.TrimSpace(testenv.Docker(t, "inspect", "--format", fmt.Sprintf("{{index .Config.Labels %q}}", k), c))
	}
	if team, tier := label("com.example.team"), label("com.example.tier"); team != "shop" || tier != "front" {
		t.Errorf("labels team=%q tier=%q, want shop (labels: wins) and front (from the file)", team, tier)
	}
	before := testenv.Docker(t, "inspect", "--format", "{{.Id}}", c)

	cli.write("web.labels", "com.example.tier=edge\n")
	if out, code := cli.run(nil, "diff"); code != 1 || !strings.Contains(out, "-/+ container "+c) {
		t.Errorf("diff after the label file changed: exit %d, want the replica replaced:\n%s", code, out)
	}
	if out, code := cli.run(nil, "apply"); code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply of the changed label file: exit %d:\n%s", code, out)
	}
	if tier := label("com.example.tier"); tier != "edge" || testenv.Docker(t, "inspect", "--format", "{{.Id}}", c) == before {
		t.Errorf("after the label file changed: tier=%q, want edge on a new container", tier)
	}
}
