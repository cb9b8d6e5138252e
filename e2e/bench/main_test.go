// Package bench measures the agent's times against the real engine. Its
// tests run only with DRIFTLESS_BENCH=1, one at a time: they measure.
package bench

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 1)) }
