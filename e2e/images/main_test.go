// Package images tests images end to end: pulls from a real registry and
// its credentials, builds from the repository, and pruning what the agent
// pulled.
package images

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 4)) }
