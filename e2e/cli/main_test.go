// Package cli tests the driftless command line end to end: flags, the
// one-shot apply, ownership of objects, the demo and the cold path.
package cli

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 4)) }
