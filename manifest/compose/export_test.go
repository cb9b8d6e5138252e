package compose

// Names the external tests of this package use.

const WorkDir = composeWorkDir

type Refused = composeRefused

var ServiceRules = composeServiceRules
