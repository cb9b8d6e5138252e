package compose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeVolumeNoCopy: nocopy as compose passes it. A named volume
// mounted where the image has files gets them (Docker copies them into a
// new, empty volume); with :nocopy, or volume.nocopy on an anonymous
// volume, it starts empty. The stand-in images have /etc/passwd.
func TestComposeVolumeNoCopy(t *testing.T) {
	t.Parallel()
	img := builtImage(t, "shop/web:1")
	app := testenv.UniqueApp(t)
	compose := fmt.Sprintf(`services:
  copied:
    image: %[1]s
    volumes: [seeded:/etc]
  empty:
    image: %[1]s
    volumes: ["bare:/etc:nocopy"]
  anon:
    image: %[1]s
    volumes:
      - type: volume
        target: /etc
        volume: {nocopy: true}
volumes: {seeded: {}, bare: {}}
`, img)
	cli := newCLIDir(t, app, map[string]string{"compose.yaml": compose})
	out, code := cli.run(nil, "apply")
	if code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	hasPasswd := func(service string) bool {
		_, err := testenv.DockerTry("cp", app+"-"+service+"-1:/etc/passwd", "-")
		return err == nil
	}
	if !hasPasswd("copied") {
		t.Errorf("without nocopy, the volume at /etc lacks the image's /etc/passwd")
	}
	for _, s := range []string{"empty", "anon"} {
		if hasPasswd(s) {
			t.Errorf("%s: with nocopy, the volume at /etc holds the image's /etc/passwd", s)
		}
	}
	if out, code := cli.run(nil, "diff"); code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("diff after apply: exit %d:\n%s", code, out)
	}
}
