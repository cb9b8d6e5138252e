// Package security tests end to end what the agent refuses to do or to
// leak: policy, content of mounts, the build context, replayed commits
// and objects shared between apps.
package security

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 4)) }
