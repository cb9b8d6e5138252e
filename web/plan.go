package web

import "github.com/driftless-dev/driftless/drift"

// planText renders a plan exactly as the CLI prints it.
func planText(p drift.Plan) string { return p.String() }
