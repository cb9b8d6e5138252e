package drift

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// Sensitive replaces a secret value wherever a plan shows it.
const Sensitive = "(sensitive)"

const (
	unset = "(unset)"
	none  = "(none)"
)

// DiffServiceSpec lists the fields that differ between two specs, in a fixed
// order, ready to show: env values of keys that either side declares secret
// are "(sensitive)", memory and CPUs are human-readable. Replicas and
// dependsOn are left out because they never force a recreate.
//
// Secret values compare as given: a spec recorded on a container holds
// them redacted, so the caller passes the desired spec redacted with the
// same key (ServiceSpec.Redacted) for unchanged secrets to compare equal.
func DiffServiceSpec(before, after manifest.ServiceSpec) []FieldChange {
	var out []FieldChange
	add := func(path, b, a string) {
		if b != a {
			out = append(out, FieldChange{Path: path, Before: b, After: a})
		}
	}
	add("image", before.Image, after.Image)
	add("command", commandString(before), commandString(after))
	add("args", quoteList(before.Args), quoteList(after.Args))

	keys := make([]string, 0, len(before.Env)+len(after.Env))
	for k := range before.Env {
		keys = append(keys, k)
	}
	for k := range after.Env {
		if _, ok := before.Env[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, inBefore := before.Env[k]
		a, inAfter := after.Env[k]
		secret := before.IsSecretEnv(k) || after.IsSecretEnv(k)
		if inBefore && inAfter && a == b {
			continue
		}
		if secret {
			b, a = Sensitive, Sensitive
		}
		if !inBefore {
			b = unset
		}
		if !inAfter {
			a = unset
		}
		out = append(out, FieldChange{Path: "env." + k, Before: b, After: a})
	}
	add("secretEnv", listOr(sortedCopy(before.SecretEnv), none), listOr(sortedCopy(after.SecretEnv), none))
	out = append(out, secretChanges(before.Secrets, after.Secrets)...)
	add("ports", portList(before.Ports), portList(after.Ports))
	add("networks", listOr(sortedCopy(before.Networks), none), listOr(sortedCopy(after.Networks), none))
	add("volumes", mountList(before.Volumes), mountList(after.Volumes))
	add("resources.memory", formatMemory(before.Resources.MemoryBytes), formatMemory(after.Resources.MemoryBytes))
	add("resources.cpus", formatCPUs(before.Resources.NanoCPUs), formatCPUs(after.Resources.NanoCPUs))
	add("readiness", readiness(before.Readiness), readiness(after.Readiness))
	add("restart", before.Restart, after.Restart)
	add("update.strategy", before.Update.Strategy, after.Update.Strategy)
	add("update.maxSurge", strconv.Itoa(before.Update.MaxSurge), strconv.Itoa(after.Update.MaxSurge))
	add("update.maxUnavailable", strconv.Itoa(before.Update.MaxUnavailable), strconv.Itoa(after.Update.MaxUnavailable))
	add("stopGracePeriodSeconds", strconv.Itoa(before.StopGracePeriodSeconds), strconv.Itoa(after.StopGracePeriodSeconds))
	for _, f := range extraFields {
		add(f.path, f.show(&before), f.show(&after))
	}
	return out
}

// extraFields are the fields added for compose files, in the model's
// order, each shown the way a manifest would say it. dependsOnCondition
// and dependsOnRestart are left out like dependsOn: they never force a
// recreate of their own.
var extraFields = []struct {
	path string
	show func(*manifest.ServiceSpec) string
}{
	{"restartMaxRetries", func(s *manifest.ServiceSpec) string { return intOr(int64(s.RestartMaxRetries), "unlimited") }},
	{"resources.pids", func(s *manifest.ServiceSpec) string { return intOr(s.Resources.PidsLimit, "unlimited") }},
	{"resources.memoryReservation", func(s *manifest.ServiceSpec) string { return formatMemoryOr(s.Resources.MemoryReservationBytes, none) }},
	{"update.delay", func(s *manifest.ServiceSpec) string { return s.Update.Delay.String() }},
	{"healthcheck", func(s *manifest.ServiceSpec) string { return healthcheck(s.Healthcheck) }},
	{"minReadySeconds", func(s *manifest.ServiceSpec) string {
		if s.MinReady == nil {
			return "(settle time)"
		}
		return s.MinReady.String()
	}},
	{"user", func(s *manifest.ServiceSpec) string { return stringOr(s.User, "(image's)") }},
	{"workingDir", func(s *manifest.ServiceSpec) string { return stringOr(s.WorkingDir, "(image's)") }},
	{"hostname", func(s *manifest.ServiceSpec) string { return stringOr(s.Hostname, "(container ID)") }},
	{"domainname", func(s *manifest.ServiceSpec) string { return stringOr(s.Domainname, none) }},
	{"init", func(s *manifest.ServiceSpec) string { return strconv.FormatBool(s.Init) }},
	{"stopSignal", func(s *manifest.ServiceSpec) string { return stringOr(s.StopSignal, "(image's)") }},
	{"tty", func(s *manifest.ServiceSpec) string { return strconv.FormatBool(s.TTY) }},
	{"stdinOpen", func(s *manifest.ServiceSpec) string { return strconv.FormatBool(s.StdinOpen) }},
	{"networkMode", func(s *manifest.ServiceSpec) string { return stringOr(s.NetworkMode, "(app networks)") }},
	{"networkPriority", func(s *manifest.ServiceSpec) string { return networkPriority(s.NetworkPriority) }},
	{"postStart", func(s *manifest.ServiceSpec) string { return hooks(s.PostStart) }},
	{"preStop", func(s *manifest.ServiceSpec) string { return hooks(s.PreStop) }},
	{"aliases", func(s *manifest.ServiceSpec) string { return aliases(s.Aliases) }},
	{"extraHosts", func(s *manifest.ServiceSpec) string { return listOr(sortedCopy(s.ExtraHosts), none) }},
	{"dns", func(s *manifest.ServiceSpec) string { return listOr(s.DNS, none) }},
	{"dnsSearch", func(s *manifest.ServiceSpec) string { return listOr(s.DNSSearch, none) }},
	{"dnsOptions", func(s *manifest.ServiceSpec) string { return listOr(s.DNSOptions, none) }},
	{"macAddress", func(s *manifest.ServiceSpec) string { return stringOr(s.MacAddress, none) }},
	{"binds", func(s *manifest.ServiceSpec) string { return binds(s.Binds) }},
	{"tmpfs", func(s *manifest.ServiceSpec) string { return tmpfs(s.Tmpfs) }},
	{"anonymousVolumes", func(s *manifest.ServiceSpec) string { return anonymousVolumes(s.AnonymousVolumes) }},
	{"privileged", func(s *manifest.ServiceSpec) string { return strconv.FormatBool(s.Privileged) }},
	{"readOnlyRootfs", func(s *manifest.ServiceSpec) string { return strconv.FormatBool(s.ReadOnlyRootfs) }},
	{"capAdd", func(s *manifest.ServiceSpec) string { return listOr(sortedCopy(s.CapAdd), none) }},
	{"capDrop", func(s *manifest.ServiceSpec) string { return listOr(sortedCopy(s.CapDrop), none) }},
	{"securityOpt", func(s *manifest.ServiceSpec) string { return listOr(s.SecurityOpt, none) }},
	{"devices", func(s *manifest.ServiceSpec) string { return devices(s.Devices) }},
	{"deviceRequests", func(s *manifest.ServiceSpec) string { return deviceRequests(s.DeviceRequests) }},
	{"volumesFrom", func(s *manifest.ServiceSpec) string { return volumesFrom(s.VolumesFrom) }},
	{"groupAdd", func(s *manifest.ServiceSpec) string { return listOr(sortedCopy(s.GroupAdd), none) }},
	{"pid", func(s *manifest.ServiceSpec) string { return stringOr(s.PID, "(own)") }},
	{"ipc", func(s *manifest.ServiceSpec) string { return stringOr(s.IPC, "(Docker's default)") }},
	{"uts", func(s *manifest.ServiceSpec) string { return stringOr(s.UTS, "(own)") }},
	{"usernsMode", func(s *manifest.ServiceSpec) string { return stringOr(s.UsernsMode, "(engine's default)") }},
	{"cgroupns", func(s *manifest.ServiceSpec) string { return stringOr(s.CgroupNS, "(engine's default)") }},
	{"runtime", func(s *manifest.ServiceSpec) string { return stringOr(s.Runtime, "(engine's default)") }},
	{"deviceCgroupRules", func(s *manifest.ServiceSpec) string { return listOr(s.DeviceCgroupRules, none) }},
	{"sysctls", func(s *manifest.ServiceSpec) string { return keyValues(s.Sysctls, nil) }},
	{"ulimits", func(s *manifest.ServiceSpec) string { return ulimits(s.Ulimits) }},
	{"shmSize", func(s *manifest.ServiceSpec) string { return formatMemoryOr(s.ShmSizeBytes, "(Docker's default)") }},
	{"logging", func(s *manifest.ServiceSpec) string { return logging(s.Logging) }},
	{"platform", func(s *manifest.ServiceSpec) string { return stringOr(s.Platform, "(engine's)") }},
	{"links", func(s *manifest.ServiceSpec) string { return listOr(s.Links, none) }},
	{"resources.cpuShares", func(s *manifest.ServiceSpec) string { return intOr(s.Resources.CPUShares, "(Docker's default)") }},
	{"resources.cpuset", func(s *manifest.ServiceSpec) string { return stringOr(s.Resources.CPUSet, "(any)") }},
	{"resources.cpuPeriod", func(s *manifest.ServiceSpec) string { return intOr(s.Resources.CPUPeriod, "(Docker's default)") }},
	{"resources.cpuQuota", func(s *manifest.ServiceSpec) string { return intOr(s.Resources.CPUQuota, "unlimited") }},
	{"resources.memorySwap", func(s *manifest.ServiceSpec) string { return swapLimit(s.Resources.MemorySwapBytes) }},
	{"resources.memorySwappiness", func(s *manifest.ServiceSpec) string { return intOr(s.Resources.MemorySwappiness, "(host's)") }},
	{"resources.oomScoreAdj", func(s *manifest.ServiceSpec) string { return intOr(int64(s.Resources.OOMScoreAdj), "0") }},
	{"resources.oomKillDisable", func(s *manifest.ServiceSpec) string { return strconv.FormatBool(s.Resources.OOMKillDisable) }},
	{"resources.blkio", func(s *manifest.ServiceSpec) string { return blkio(s.Resources.Blkio) }},
}

// blkio shows the IO weight and limits in the order written: "weight
// 300; read 1Mi/s on /dev/sda; write 100 ops/s on /dev/sda".
func blkio(b *manifest.Blkio) string {
	if b.Empty() {
		return none
	}
	var parts []string
	if b.Weight != 0 {
		parts = append(parts, fmt.Sprintf("weight %d", b.Weight))
	}
	for _, d := range b.WeightDevice {
		parts = append(parts, fmt.Sprintf("weight %d on %s", d.Weight, d.Path))
	}
	for _, l := range []struct {
		what string
		bps  bool
		devs []manifest.ThrottleDevice
	}{{"read", true, b.DeviceReadBps}, {"write", true, b.DeviceWriteBps}, {"read", false, b.DeviceReadIOps}, {"write", false, b.DeviceWriteIOps}} {
		for _, d := range l.devs {
			rate := strconv.FormatUint(d.Rate, 10) + " ops/s"
			if l.bps {
				rate = manifest.FormatMemory(int64(min(d.Rate, 1<<62))) + "/s"
			}
			parts = append(parts, l.what+" "+rate+" on "+d.Path)
		}
	}
	return strings.Join(parts, "; ")
}

// swapLimit shows memory plus swap: -1 unlimited, 0 Docker's default.
func swapLimit(n int64) string {
	switch n {
	case 0:
		return "(Docker's default)"
	case -1:
		return "unlimited"
	}
	return manifest.FormatMemory(n)
}

func stringOr(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

func intOr(n int64, zero string) string {
	if n == 0 {
		return zero
	}
	return strconv.FormatInt(n, 10)
}

func formatMemoryOr(b int64, zero string) string {
	if b == 0 {
		return zero
	}
	return manifest.FormatMemory(b)
}

func healthcheck(h *manifest.Healthcheck) string {
	switch {
	case h == nil:
		return "(image's)"
	case h.Disabled():
		return "disabled"
	}
	out := quoteList(h.Test)
	for _, d := range []struct {
		word string
		v    time.Duration
	}{{"every", h.Interval}, {"timeout", h.Timeout}, {"start period", h.StartPeriod}, {"start interval", h.StartInterval}} {
		if d.v != 0 {
			out += ", " + d.word + " " + d.v.String()
		}
	}
	if h.Retries != 0 {
		out += ", retries " + strconv.Itoa(h.Retries)
	}
	return out
}

// hooks shows each hook's command, quoted, and what else it sets.
func hooks(hs []manifest.Hook) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%q", h.Command)
		if h.User != "" {
			parts[i] += " as " + h.User
		}
		if h.Privileged {
			parts[i] += " privileged"
		}
		if h.WorkingDir != "" {
			parts[i] += " in " + h.WorkingDir
		}
		for _, k := range slices.Sorted(maps.Keys(h.Env)) {
			parts[i] += " " + k + "=" + h.Env[k]
		}
	}
	return listOr(parts, none)
}

func networkPriority(m map[string]int) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, n+": "+strconv.Itoa(m[n]))
	}
	return listOr(parts, none)
}

func aliases(m map[string][]string) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(m)) {
		if len(m[n]) > 0 {
			parts = append(parts, n+": "+strings.Join(sortedCopy(m[n]), " "))
		}
	}
	return listOr(parts, none)
}

// binds shows each bind as source:target[:options]; a state directory is
// state:PATH (its content is data, not part of the spec); a repository
// source carries its content hash, so a changed file shows as a change. The hash
// is shown as long as the service hash covers it: a spec recorded before
// content hashes were full then reads the same as today's.
func binds(bs []manifest.BindMount) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		src := b.HostPath
		if b.RepoPath != "" {
			src = "repo:" + b.RepoPath
			if b.ContentHash != "" {
				src += "@" + b.ContentHash[:min(manifest.LegacyContentIDLen, len(b.ContentHash))]
			}
		}
		if b.StatePath != "" {
			src = "state:" + b.StatePath
		}
		var opts []string
		for _, o := range []struct {
			on   bool
			word string
		}{{b.ReadOnly, "ro"}, {b.CreateHostPath, "create"}, {b.Propagation != "", b.Propagation}, {b.SELinux != "", b.SELinux}} {
			if o.on {
				opts = append(opts, o.word)
			}
		}
		s[i] = src + ":" + b.MountPath
		if len(opts) > 0 {
			s[i] += ":" + strings.Join(opts, ",")
		}
	}
	slices.Sort(s)
	return listOr(s, none)
}

func tmpfs(ts []manifest.TmpfsMount) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.MountPath
		if t.SizeBytes != 0 {
			s[i] += " size=" + manifest.FormatMemory(t.SizeBytes)
		}
		if t.Mode != 0 {
			s[i] += " mode=" + strconv.FormatUint(uint64(t.Mode), 8)
		}
		if len(t.Options) > 0 {
			s[i] += " " + strings.Join(t.Options, ",")
		}
	}
	slices.Sort(s)
	return listOr(s, none)
}

func anonymousVolumes(vs []manifest.AnonymousVolume) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.MountPath
		if v.NoCopy {
			s[i] += ":nocopy"
		}
	}
	slices.Sort(s)
	return listOr(s, none)
}

func devices(ds []manifest.Device) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.HostPath + ":" + d.ContainerPath
		if d.Permissions != "" {
			s[i] += ":" + d.Permissions
		}
	}
	slices.Sort(s)
	return listOr(s, none)
}

// deviceRequests shows each request on one line ("nvidia count=all
// caps=[gpu]"), sorted.
func deviceRequests(rs []manifest.DeviceRequest) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	slices.Sort(s)
	return listOr(s, none)
}

func ulimits(us []manifest.Ulimit) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = u.Name + "=" + strconv.FormatInt(u.Soft, 10) + ":" + strconv.FormatInt(u.Hard, 10)
	}
	slices.Sort(s)
	return listOr(s, none)
}

// keyValues shows a map as sorted k=v pairs; values whose key secret
// reports are shown as Sensitive.
func keyValues(m map[string]string, secret func(string) bool) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if secret != nil && secret(k) {
			v = Sensitive
		}
		parts = append(parts, k+"="+v)
	}
	return listOr(parts, none)
}

// secretOption reports a log driver option that usually holds a credential
// (splunk-token, awslogs credentials, ...): its value is never shown.
func secretOption(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"token", "password", "secret", "key", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

func logging(l *manifest.Logging) string {
	if l == nil {
		return "(Docker's default)"
	}
	out := stringOr(l.Driver, "(Docker's default driver)")
	if len(l.Options) > 0 {
		out += " (" + keyValues(l.Options, secretOption) + ")"
	}
	return out
}

func sortedCopy(l []string) []string {
	c := slices.Clone(l)
	slices.Sort(c)
	return c
}

func listOr(l []string, empty string) string {
	if len(l) == 0 {
		return empty
	}
	return strings.Join(l, ", ")
}

func quoteList(l []string) string {
	if len(l) == 0 {
		return none
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, " ") + "]"
}

func portList(ports []manifest.Port) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = p.String()
	}
	slices.Sort(s)
	return listOr(s, none)
}

func mountList(mounts []manifest.VolumeMount) string {
	s := make([]string, len(mounts))
	for i, m := range mounts {
		s[i] = m.Name + ":" + m.MountPath
		var opts []string
		for _, o := range []struct {
			on   bool
			name string
		}{{m.ReadOnly, "ro"}, {m.SELinux != "", m.SELinux}, {m.NoCopy, "nocopy"}} {
			if o.on {
				opts = append(opts, o.name)
			}
		}
		if len(opts) > 0 {
			s[i] += ":" + strings.Join(opts, ",")
		}
	}
	slices.Sort(s)
	return listOr(s, none)
}

func readiness(r *manifest.Readiness) string {
	if r == nil {
		return none
	}
	var probe string
	switch {
	case r.HTTPGet != nil:
		probe = "httpGet :" + strconv.Itoa(r.HTTPGet.Port) + r.HTTPGet.Path
	case r.TCPSocket != nil:
		probe = "tcpSocket :" + strconv.Itoa(r.TCPSocket.Port)
	case r.Exec != nil && r.Exec.Shell:
		probe = "exec shell " + quoteList(r.Exec.Command)
	case r.Exec != nil:
		probe = "exec " + quoteList(r.Exec.Command)
	default:
		probe = "no probe"
	}
	return probe + " (delay " + strconv.Itoa(r.InitialDelaySeconds) + "s, every " + strconv.Itoa(r.PeriodSeconds) +
		"s, timeout " + strconv.Itoa(r.TimeoutSeconds) + "s, success " + strconv.Itoa(r.SuccessThreshold) +
		", failure " + strconv.Itoa(r.FailureThreshold) + ")"
}

// formatMemory shows memory as a manifest would write it (512Mi); zero is
// no limit.
func formatMemory(b int64) string {
	if b == 0 {
		return "unlimited"
	}
	return manifest.FormatMemory(b)
}

// formatCPUs shows nano-CPUs as a CPU count (1.5); zero is no limit.
func formatCPUs(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return manifest.FormatCPUs(n)
}

// secretChanges says which SOPS secrets changed, by their digests, and
// nothing of their values.
func secretChanges(before, after []manifest.SecretRef) []FieldChange {
	var out []FieldChange
	for _, a := range after {
		i := slices.IndexFunc(before, func(b manifest.SecretRef) bool { return b.Name == a.Name })
		switch {
		case i < 0:
			out = append(out, FieldChange{Path: "secret " + a.Name, Before: unset, After: "added"})
		case before[i].Digest != a.Digest || before[i].File != a.File || before[i].Key != a.Key:
			out = append(out, FieldChange{Path: "secret " + a.Name, Before: Sensitive, After: "changed"})
		}
		if i >= 0 && secretDelivery(before[i]) != secretDelivery(a) {
			out = append(out, FieldChange{Path: "secret " + a.Name + " file", Before: secretDelivery(before[i]), After: secretDelivery(a)})
		}
	}
	for _, b := range before {
		if !slices.ContainsFunc(after, func(a manifest.SecretRef) bool { return a.Name == b.Name }) {
			out = append(out, FieldChange{Path: "secret " + b.Name, Before: "declared", After: "removed"})
		}
	}
	return out
}

// secretDelivery is where and how a secret's file appears: its target,
// owner and mode (nothing of its value).
func secretDelivery(r manifest.SecretRef) string {
	owner := r.UID + ":" + r.GID
	if owner == ":" {
		owner = "the agent's user"
	}
	return fmt.Sprintf("%s owner %s mode %#o", r.Target, owner, r.Mode)
}

func volumesFrom(vs []manifest.VolumesFrom) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return listOr(out, none)
}

// commandString is the entrypoint a spec runs, as a diff shows it.
func commandString(s manifest.ServiceSpec) string {
	if s.ClearEntrypoint && len(s.Command) == 0 {
		return "(none: the image's cleared)"
	}
	return quoteList(s.Command)
}
