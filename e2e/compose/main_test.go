// Package compose tests compose apps end to end: a corpus of realistic
// stacks through one agent, refused revisions with positions, and the
// equivalence of driftless apply with docker-compose setting by setting.
package compose

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 4)) }
