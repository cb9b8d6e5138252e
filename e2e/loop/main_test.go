// Package loop tests the agent's loop end to end against the real engine:
// convergence, healing, crash loops, pins, signed commits, webhooks,
// transports, the view of the engine, limits, notifications and adoption.
package loop

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 4)) }
