package deploy

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
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
)

// containerFromSummary turns one list entry into plain data. Ownership and
// identity come from labels only.
func containerFromSummary(s container.Summary) drift.Container {
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
	c.ExitCode, _ = parseExitCode(s.Status)
	c.Health = parseHealth(s.Status)
	if s.NetworkSettings != nil {
		for name := range s.NetworkSettings.Networks {
			c.Networks = append(c.Networks, name)
		}
		slices.Sort(c.Networks)
	}
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
	if c.App == "" {
		return
	}
	c.Service = labels[drift.LabelService]
	c.Slot, _ = strconv.Atoi(labels[drift.LabelSlot])
	c.SpecHash = labels[drift.LabelSpecHash]
	c.Revision = labels[drift.LabelRevision]
	c.Spec = parseSpecLabel(labels[drift.LabelSpec])
}

// parseSpecLabel reads the recorded spec; nil when absent or unreadable.
func parseSpecLabel(raw string) *manifest.ServiceSpec {
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
func summaryIP(s container.Summary) string {
	if s.NetworkSettings == nil {
		return ""
	}
	return firstIP(s.NetworkSettings.Networks)
}

func firstIP(networks map[string]*network.EndpointSettings) string {
	names := make([]string, 0, len(networks))
	for name := range networks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if ep := networks[name]; ep != nil && ep.IPAddress.IsValid() {
			return ep.IPAddress.String()
		}
	}
	return ""
}

func networkFromSummary(s network.Summary) drift.Network {
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

func volumeFromSummary(v volume.Volume) drift.Volume {
	return drift.Volume{
		Name:     v.Name,
		App:      v.Labels[drift.LabelApp],
		Resource: v.Labels[drift.LabelResource],
		SpecHash: v.Labels[drift.LabelSpecHash],
		Driver:   v.Driver,
		Labels:   v.Labels,
	}
}

var exitCodeRE = regexp.MustCompile(`^(?:Exited|Restarting) \((-?\d+)\)`)

// parseExitCode reads the last exit code from Docker's "Exited (137) 3
// seconds ago" or "Restarting (1) 2 seconds ago".
func parseExitCode(status string) (int, bool) {
	m := exitCodeRE.FindStringSubmatch(status)
	if m == nil {
		return 0, false
	}
	code, err := strconv.Atoi(m[1])
	return code, err == nil
}

// parseHealth reads the healthcheck word Docker appends to the status:
// "Up 3 minutes (healthy)", "(unhealthy)", "(health: starting)".
func parseHealth(status string) string {
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
func parseUptime(status string) (time.Duration, bool) {
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

// infoFromInspect is what an inspect tells the prober.
func infoFromInspect(c container.InspectResponse) runtimeInfo {
	info := runtimeInfo{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), RestartCount: c.RestartCount, inspected: true}
	if c.Config != nil {
		info.App = c.Config.Labels[drift.LabelApp]
		if spec := parseSpecLabel(c.Config.Labels[drift.LabelSpec]); spec != nil {
			info.Readiness = spec.Readiness
			info.secrets = secretEnvValues(c.Config.Env, spec)
		}
	}
	if c.State != nil {
		info.State = drift.ContainerState(c.State.Status)
		info.ExitCode = c.State.ExitCode
		info.StartedAt, _ = time.Parse(time.RFC3339Nano, c.State.StartedAt)
		info.FinishedAt, _ = time.Parse(time.RFC3339Nano, c.State.FinishedAt)
		if c.State.Health != nil {
			info.Health = string(c.State.Health.Status)
			if info.Health == "none" {
				info.Health = ""
			}
			if n := len(c.State.Health.Log); n > 0 && c.State.Health.Log[n-1] != nil {
				info.HealthOutput = c.State.Health.Log[n-1].Output
			}
		}
	}
	if c.NetworkSettings != nil {
		info.IP = firstIP(c.NetworkSettings.Networks)
	}
	info.Config = runtimeConfig(c)
	return info
}

// runtimeConfig is what an inspect shows of the settings that can change
// on a running container.
func runtimeConfig(c container.InspectResponse) *drift.RuntimeConfig {
	cfg := &drift.RuntimeConfig{Aliases: map[string][]string{}}
	if h := c.HostConfig; h != nil {
		cfg.MemoryBytes, cfg.NanoCPUs, cfg.MemoryReservationBytes = h.Memory, h.NanoCPUs, h.MemoryReservation
		if h.PidsLimit != nil {
			cfg.PidsLimit = *h.PidsLimit
		}
		cfg.RestartPolicy, cfg.RestartMaxRetries = string(h.RestartPolicy.Name), h.RestartPolicy.MaximumRetryCount
	}
	if c.NetworkSettings != nil {
		for name, ep := range c.NetworkSettings.Networks {
			if ep != nil {
				cfg.Aliases[name] = slices.Clone(ep.Aliases)
			}
		}
	}
	return cfg
}

// secretEnvValues are the values, in a container's env list, of the keys
// its recorded spec declares secret: the container itself is where the
// values are known once it runs.
func secretEnvValues(env []string, spec *manifest.ServiceSpec) []string {
	var out []string
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && spec.IsSecretEnv(k) {
			out = append(out, v)
		}
	}
	return out
}
