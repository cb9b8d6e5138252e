package dockerspec

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
)

// containerFromSummary turns one list entry into plain data. Ownership and
// identity come from labels only.
func ContainerFromSummary(s container.Summary) drift.Container {
	c := drift.Container{
		ID:      s.ID,
		Image:   s.Image,
		ImageID: s.ImageID,
		State:   drift.ContainerState(s.State),
		Status:  s.Status,
		Created: time.Unix(s.Created, 0).UTC(),
		Labels:  s.Labels,
	}
	if len(s.Names) > 0 {
		c.Name = strings.TrimPrefix(s.Names[0], "/")
	}
	applyContainerLabels(&c, s.Labels)
	c.ComposeProject, c.ComposeService = s.Labels[drift.LabelComposeProject], s.Labels[drift.LabelComposeService]
	c.ComposeNumber, _ = strconv.Atoi(s.Labels[drift.LabelComposeNumber])
	c.ExitCode, _ = ParseExitCode(s.Status)
	c.Health = ParseHealth(s.Status)
	if s.NetworkSettings != nil {
		for name := range s.NetworkSettings.Networks {
			c.Networks = append(c.Networks, name)
		}
		slices.Sort(c.Networks)
	}
	if id, ok := strings.CutPrefix(s.HostConfig.NetworkMode, "container:"); ok {
		c.NetworkContainer = id
	}
	c.VolumeNames = []string{}
	for _, m := range s.Mounts {
		if m.Type == mount.TypeVolume && m.Name != "" {
			c.VolumeNames = append(c.VolumeNames, m.Name)
		}
	}
	slices.Sort(c.VolumeNames)
	for _, p := range s.Ports {
		if p.PublicPort != 0 && !slices.Contains(c.HostPorts, int(p.PublicPort)) {
			c.HostPorts = append(c.HostPorts, int(p.PublicPort))
		}
	}
	slices.Sort(c.HostPorts)
	return c
}

// applyContainerLabels fills the identity fields from driftless's labels.
func applyContainerLabels(c *drift.Container, labels map[string]string) {
	c.App = labels[drift.LabelApp]
	if c.App == "" || labels[drift.LabelJob] != "" {
		// A job's run is no replica of any service (see drift.LabelJob).
		c.App = ""
		return
	}
	c.Service = labels[drift.LabelService]
	c.Slot, _ = strconv.Atoi(labels[drift.LabelSlot])
	c.SpecHash = labels[drift.LabelSpecHash]
	c.Revision = labels[drift.LabelRevision]
	c.Spec = ParseSpecLabel(labels[drift.LabelSpec])
}

// parseSpecLabel reads the recorded spec; nil when absent or unreadable.
func ParseSpecLabel(raw string) *manifest.ServiceSpec {
	if raw == "" {
		return nil
	}
	var spec manifest.ServiceSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return nil
	}
	return &spec
}

// summaryIP is the container's address on the first (by name) network that
// has one: every network of ours is reachable from the host on Linux.
func SummaryIP(s container.Summary) string {
	if s.NetworkSettings == nil {
		return ""
	}
	return FirstIP(s.NetworkSettings.Networks)
}

func FirstIP(networks map[string]*network.EndpointSettings) string {
	_, ip := FirstNetwork(networks)
	return ip
}

// FirstNetwork is the first network (by name) on which the container has
// an address, and that address; "", "" when none has.
func FirstNetwork(networks map[string]*network.EndpointSettings) (name, ip string) {
	names := make([]string, 0, len(networks))
	for name := range networks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if ep := networks[name]; ep != nil && ep.IPAddress.IsValid() {
			return name, ep.IPAddress.String()
		}
	}
	return "", ""
}

func NetworkFromSummary(s network.Summary) drift.Network {
	return drift.Network{
		ID:       s.ID,
		Name:     s.Name,
		App:      s.Labels[drift.LabelApp],
		Resource: s.Labels[drift.LabelResource],
		SpecHash: s.Labels[drift.LabelSpecHash],
		Driver:   s.Driver,
		Labels:   s.Labels,
		Created:  s.Created,
	}
}

func VolumeFromSummary(v volume.Volume) drift.Volume {
	out := drift.Volume{
		Name:     v.Name,
		App:      v.Labels[drift.LabelApp],
		Resource: v.Labels[drift.LabelResource],
		SpecHash: v.Labels[drift.LabelSpecHash],
		Driver:   v.Driver,
		Labels:   v.Labels,
	}
	anonymousIdentity(&out, v.Labels)
	return out
}

var exitCodeRE = regexp.MustCompile(`^(?:Exited|Restarting) \((-?\d+)\)`)

// parseExitCode reads the last exit code from Docker's "Exited (137) 3
// seconds ago" or "Restarting (1) 2 seconds ago".
func ParseExitCode(status string) (int, bool) {
	m := exitCodeRE.FindStringSubmatch(status)
	if m == nil {
		return 0, false
	}
	code, err := strconv.Atoi(m[1])
	return code, err == nil
}

// parseHealth reads the healthcheck word Docker appends to the status:
// "Up 3 minutes (healthy)", "(unhealthy)", "(health: starting)".
func ParseHealth(status string) string {
	switch {
	case strings.HasSuffix(status, "(healthy)"):
		return "healthy"
	case strings.HasSuffix(status, "(unhealthy)"):
		return "unhealthy"
	case strings.HasSuffix(status, "(health: starting)"):
		return "starting"
	}
	return ""
}

var uptimeRE = regexp.MustCompile(`^Up (Less than a second|About a minute|About an hour|(\d+) (second|minute|hour|day|week|month|year)s?)`)

// parseUptime reads how long a running container has been up from Docker's
// coarse "Up 3 seconds" words (a lower bound).
func ParseUptime(status string) (time.Duration, bool) {
	m := uptimeRE.FindStringSubmatch(status)
	if m == nil {
		return 0, false
	}
	switch m[1] {
	case "Less than a second":
		return 0, true
	case "About a minute":
		return time.Minute, true
	case "About an hour":
		return time.Hour, true
	}
	n, _ := strconv.Atoi(m[2])
	unit := map[string]time.Duration{
		"second": time.Second, "minute": time.Minute, "hour": time.Hour,
		"day": 24 * time.Hour, "week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour,
	}[m[3]]
	return time.Duration(n) * unit, true
}
