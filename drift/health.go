package drift

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift/manifest"
)

// Health is how well a service (or app) runs, from best to worst:
// Healthy, Progressing, Missing, Degraded.
type Health string

const (
	HealthHealthy     Health = "Healthy"
	HealthProgressing Health = "Progressing"
	HealthMissing     Health = "Missing"
	HealthDegraded    Health = "Degraded"
)

func (h Health) rank() int {
	switch h {
	case HealthHealthy:
		return 0
	case HealthProgressing:
		return 1
	case HealthMissing:
		return 2
	default:
		return 3
	}
}

// SyncStatus says whether the running state matches the revision.
type SyncStatus string

const (
	SyncSynced    SyncStatus = "Synced"
	SyncOutOfSync SyncStatus = "OutOfSync"
)

// SyncOf is the one judgement of whether the running state matches the
// revision: any change to make, change held back (backoff, a dependency),
// conflict, or a refused newer revision leaves the app OutOfSync.
func SyncOf(plan Plan, revisionRefused bool) SyncStatus {
	if !plan.Empty() || len(plan.Deferred) > 0 || len(plan.Conflicts) > 0 || revisionRefused {
		return SyncOutOfSync
	}
	return SyncSynced
}

// ServiceHealth is the assessment of one declared service.
type ServiceHealth struct {
	Service string `json:"service"`
	Desired int    `json:"desired"`
	Running int    `json:"running"`
	Ready   int    `json:"ready"`
	Health  Health `json:"health"`
	// Message says what is wrong and what to do about it.
	Message string `json:"message"`
}

// AppHealth is the assessment of an app: the worst of its services.
type AppHealth struct {
	App      string          `json:"app"`
	Revision string          `json:"revision"`
	Sync     SyncStatus      `json:"sync"`
	Health   Health          `json:"health"`
	Services []ServiceHealth `json:"services"`
}

// Assess judges each declared service from the observed containers and the
// plan computed from the same input. It is pure: the clock is
// in.Options.Now.
func Assess(in Input, plan Plan) AppHealth {
	out := AppHealth{App: in.App, Revision: in.Options.Revision, Sync: SyncOf(plan, false), Health: HealthHealthy}
	if in.Desired == nil {
		return out
	}
	byService := map[string][]*Container{}
	for i := range in.Actual.Containers {
		c := &in.Actual.Containers[i]
		if c.App == in.App {
			byService[c.Service] = append(byService[c.Service], c)
		}
	}
	pending, outsideGit := map[string]int{}, map[string]int{}
	for _, c := range plan.Changes {
		if c.Service != "" {
			pending[c.Service]++
			if c.Cause == CauseDrift {
				outsideGit[c.Service]++
			}
		}
	}
	deferred := map[string][]Change{}
	for _, c := range plan.Deferred {
		deferred[c.Service] = append(deferred[c.Service], c)
	}
	// A conflict holds a service back when it names the service, or takes
	// the name of a network or volume the service uses.
	conflicts := map[string][]Conflict{}
	byObject := map[string][]Conflict{}
	for _, c := range plan.Conflicts {
		if c.Service != "" {
			conflicts[c.Service] = append(conflicts[c.Service], c)
		} else if c.Kind != KindContainer {
			byObject[string(c.Kind)+" "+c.Name] = append(byObject[string(c.Kind)+" "+c.Name], c)
		}
	}
	services := slices.Clone(in.Desired.Services)
	slices.SortFunc(services, func(a, b manifest.Service) int { return cmp.Compare(a.Name, b.Name) })
	for i := range services {
		s := &services[i]
		held := conflicts[s.Name]
		for _, n := range s.Spec.Networks {
			held = append(held, byObject[string(KindNetwork)+" "+in.Desired.NetworkDockerName(n)]...)
		}
		for _, v := range s.Spec.Volumes {
			held = append(held, byObject[string(KindVolume)+" "+in.Desired.VolumeDockerName(v.Name)]...)
		}
		sh := assessService(in, s, byService[s.Name], pending[s.Name], outsideGit[s.Name], deferred[s.Name], held)
		if sh.Health.rank() > out.Health.rank() {
			out.Health = sh.Health
		}
		out.Services = append(out.Services, sh)
	}
	return out
}

func assessService(in Input, svc *manifest.Service, containers []*Container, pending, outsideGit int, deferred []Change, conflicts []Conflict) ServiceHealth {
	want := svc.Spec.Replicas
	sh := ServiceHealth{Service: svc.Name, Desired: want}
	// The replica of a slot is the container the plan keeps for it.
	best := make([]*Container, want+1)
	for _, c := range containers {
		if c.Slot < 1 || c.Slot > want {
			continue
		}
		if cur := best[c.Slot]; cur == nil || preferContainer(c, cur, svc.Hash) {
			best[c.Slot] = c
		}
	}
	var problems, waiting []string
	completed, exist := 0, 0
	for _, c := range best[1:] {
		if c == nil {
			continue
		}
		exist++
		name := dockerName(c.Name)
		if c.State == StateRunning {
			sh.Running++
			if c.Ready {
				sh.Ready++
			}
		}
		killed := c.ExitCode == exitSIGKILL || c.ExitCode == exitSIGTERM
		switch {
		case c.State == StateRestarting || (c.State == StateExited && c.ExitCode != 0 && !killed) ||
			// Past restarts of a replica that is ready again are history.
			(c.RestartCount >= 3 && !(c.State == StateRunning && c.Ready)):
			problems = append(problems, name+" is crash-looping: exit code "+strconv.Itoa(c.ExitCode)+", "+
				count(c.RestartCount, "restart", "restarts")+", "+statusOf(c)+"; see docker logs "+name)
		case c.State == StatePaused:
			problems = append(problems, name+" is paused outside Git; run docker unpause "+name)
		case c.State == StateExited && c.ExitCode == 0 &&
			(svc.Spec.Restart == manifest.RestartNever || svc.Spec.Restart == manifest.RestartOnFailure):
			// A clean exit under these policies is a finished job, not a failure.
			completed++
		case c.State == StateRunning && !c.Ready:
			why := ""
			if c.ReadyReason != "" {
				why = ": " + c.ReadyReason
			}
			if d := in.Options.ReadyDeadline; d > 0 && in.Options.Now.Sub(c.Created) > d {
				problems = append(problems, name+" has not become ready within "+d.String()+why+
					"; check its readiness probe and logs")
			} else {
				waiting = append(waiting, "waiting for "+name+" to become ready"+why)
			}
		}
	}
	var waitsFor []string
	for _, d := range deferred {
		if d.NotBefore.IsZero() {
			waitsFor = append(waitsFor, d.Reason)
			continue
		}
		problems = append(problems, d.Name+" keeps failing; next repair not before "+d.NotBefore.Format("15:04:05"))
	}
	waitsFor = slices.Compact(waitsFor)
	held := make([]string, 0, len(conflicts))
	for _, c := range conflicts {
		held = append(held, string(c.Kind)+" "+c.Name+": "+c.Reason)
	}
	ready := strconv.Itoa(sh.Ready) + "/" + strconv.Itoa(want) + " replicas ready"
	pendingText := count(pending, "change", "changes") + " pending"
	failed, rolloutFailed := in.Options.FailedRollouts[svc.Name]
	rolloutFailed = rolloutFailed && failed.Hash == svc.Hash
	switch {
	case rolloutFailed:
		// The old replicas may still serve, but the revision is not
		// running and will not be until someone fixes it.
		sh.Health = HealthDegraded
		sh.Message = ready + "; rollout failed: " + failed.Failure.Detail() + "; " + nextAttempt(failed.NotBefore, in.Options.Now) +
			" (fix the image or manifest in a new commit)"
	case want > 0 && len(containers) == 0:
		sh.Health = HealthMissing
		sh.Message = "no replica exists"
		switch {
		case len(held) > 0:
			sh.Message += "; held back by a conflict: " + strings.Join(held, "; ") + "; remove or rename it"
		case len(waitsFor) > 0:
			sh.Message += "; " + strings.Join(waitsFor, "; ")
		case pending > 0:
			sh.Message += "; " + pendingText
		case len(deferred) > 0:
			sh.Message += "; it keeps failing, next attempt not before " + deferred[0].NotBefore.Format("15:04:05")
		}
	case len(problems) > 0:
		sh.Health = HealthDegraded
		sh.Message = ready + "; " + strings.Join(problems, "; ")
	case len(waitsFor) > 0 && sh.Ready < want:
		// It waits on a dependency that cannot come up; it is as stuck
		// as the dependency.
		sh.Health = HealthDegraded
		sh.Message = ready + "; " + strings.Join(waitsFor, "; ")
	case exist < want && pending == 0 && len(held) > 0:
		sh.Health = HealthDegraded
		sh.Message = ready + "; held back by a conflict: " + strings.Join(held, "; ") + "; remove or rename it"
	case in.Options.NoSelfHeal && outsideGit > 0:
		// Nothing will repair it, so it is not progressing.
		sh.Health = HealthDegraded
		sh.Message = ready + "; " + count(outsideGit, "change", "changes") + " made outside Git not repaired: self-heal is off"
	case pending > 0:
		sh.Health = HealthProgressing
		sh.Message = ready + "; " + pendingText
	case sh.Ready+completed < want:
		sh.Health = HealthProgressing
		sh.Message = ready
		if len(waiting) > 0 {
			sh.Message += "; " + strings.Join(waiting, "; ")
		}
	default:
		sh.Health = HealthHealthy
		sh.Message = ready
		if completed > 0 {
			sh.Message += " (" + strconv.Itoa(completed) + " completed with exit code 0; restart policy " + svc.Spec.Restart + ")"
		}
	}
	return sh
}

func nextAttempt(at, now time.Time) string {
	if !at.After(now) {
		return "retrying now"
	}
	return "next attempt in " + at.Sub(now).Round(time.Second).String()
}

// preferContainer is Compute's choice of the container that holds a slot:
// desired spec, then running, then newest, then lowest ID.
func preferContainer(a, b *Container, hash string) bool {
	if (a.SpecHash == hash) != (b.SpecHash == hash) {
		return a.SpecHash == hash
	}
	if (a.State == StateRunning) != (b.State == StateRunning) {
		return a.State == StateRunning
	}
	if !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	return a.ID < b.ID
}
