package drift

import (
	"slices"
	"strconv"
	"strings"

	"github.com/driftless-dev/driftless/drift/manifest"
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
// Secret values compare equal whether a side holds the value or its
// manifest.RedactValue form (as a spec recorded on a container does).
func DiffServiceSpec(before, after manifest.ServiceSpec) []FieldChange {
	var out []FieldChange
	add := func(path, b, a string) {
		if b != a {
			out = append(out, FieldChange{Path: path, Before: b, After: a})
		}
	}
	add("image", before.Image, after.Image)
	add("command", quoteList(before.Command), quoteList(after.Command))
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
		if inBefore && inAfter && (a == b || secret && redactedForm(a) == redactedForm(b)) {
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
		if m.ReadOnly {
			s[i] += ":ro"
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

// redactedForm is how a secret value is compared: a spec recorded on a
// container holds manifest.RedactValue of it, a desired spec the value
// itself, and both must compare equal when the secret did not change.
func redactedForm(v string) string {
	if strings.HasPrefix(v, "(sensitive") {
		return v
	}
	return manifest.RedactValue(v)
}
