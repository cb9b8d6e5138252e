package compose

import "github.com/driftless-dev/driftless/manifest/internal/composerules"

// Names the external tests of this package use.

const WorkDir = composeWorkDir

type Refused = composerules.Refused

var ServiceRules = composerules.Service
