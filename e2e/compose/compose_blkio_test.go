package compose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeBlockIO applies blkio_config on the real engine: the device
// limits reach the container as written, and the weight as the engine
// takes it. A kernel without IO weight discards it with a warning, which
// apply shows as the engine gave it, exactly when `docker create` gets
// one for the same weight; the discarded weight is no drift.
func TestComposeBlockIO(t *testing.T) {
	t.Parallel()
	image := builtImage(t, "shop/blkio:1")
	dev := blockDevice(t)
	app := testenv.UniqueApp(t)

	// What the engine makes of the weight on its own.
	probe := "probe-" + app
	created := testenv.Docker(t, "create", "--name", probe, "--blkio-weight", "300", image)
	engineWeight := testenv.FieldString(testenv.Inspect(t, "container", probe), "HostConfig.BlkioWeight")
	testenv.Docker(t, "rm", "-f", probe)
	engineWarning := ""
	for _, line := range strings.Split(created, "\n") {
		if w, ok := strings.CutPrefix(line, "WARNING: "); ok {
			engineWarning = w
		}
	}

	cli := newCLIDir(t, app, map[string]string{"compose.yaml": fmt.Sprintf(`services:
  disk:
    image: %s
    blkio_config:
      weight: 300
      device_read_bps: [{path: %s, rate: 12mb}]
      device_write_iops: [{path: %s, rate: 300}]
`, image, dev, dev)})
	out, code := cli.run(nil, "apply")
	if code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	c := app + "-disk-1"
	wantInspect(t, c, map[string]string{
		"HostConfig.BlkioDeviceReadBps":   fmt.Sprintf(`[{"Path":"%s","Rate":12582912}]`, dev),
		"HostConfig.BlkioDeviceWriteIOps": fmt.Sprintf(`[{"Path":"%s","Rate":300}]`, dev),
		"HostConfig.BlkioWeight":          engineWeight,
	})
	switch {
	case engineWarning != "" && !strings.Contains(out, "the engine warned: "+engineWarning):
		t.Errorf("docker create warned %q; apply does not show it:\n%s", engineWarning, out)
	case engineWarning == "" && strings.Contains(out, "the engine warned"):
		t.Errorf("docker create gave no warning; apply shows one:\n%s", out)
	}
	t.Logf("engine weight %s, warning %q", engineWeight, engineWarning)

	out, code = cli.run(nil, "diff")
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("diff after apply: exit %d, want no changes (a discarded weight is no drift):\n%s", code, out)
	}
}
