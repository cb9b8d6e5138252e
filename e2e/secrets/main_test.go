// Package secrets tests secrets end to end: sops and age files decrypted
// into the environment and into files, for native and compose apps, and
// that nothing secret reaches inspect, logs or history.
package secrets

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 4)) }
