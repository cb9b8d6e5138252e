package status

import "time"

// SeriesPoint is one minute of one service: the ready and desired counts
// at the minute's last observation, and the lowest and highest ready
// counts seen in it (so a replica removed and recreated within a second,
// or a deploy and a scale-down in the same minute, still show).
type SeriesPoint struct {
	Time     time.Time `json:"time"` // start of the minute, UTC
	Ready    int       `json:"ready"`
	Desired  int       `json:"desired"`
	MinReady int       `json:"minReady"`
	MaxReady int       `json:"maxReady"`
}

// ServiceSeries is one service's points, oldest first. A minute without a
// point is a minute the agent did not run.
type ServiceSeries struct {
	Service string        `json:"service"`
	Points  []SeriesPoint `json:"points"`
}
