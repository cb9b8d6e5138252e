// Package web tests the agent's web face end to end, in a real browser
// where it matters: the dashboard, the timeline, and the web server's
// security (tokens, TLS, capabilities, log streams).
package web

import (
	"os"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 4)) }
