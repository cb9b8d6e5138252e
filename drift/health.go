package drift

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/manifest"
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
	if in.Options.Target == manifest.TargetSwarm {
		return assessSwarm(in, plan, out)
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

// serviceFindings is what the replicas of one service and the plan say,
// before it is judged.
type serviceFindings struct {
	problems  []string // Degraded: something is wrong that waiting does not fix
	waiting   []string // replicas still becoming ready
	waitsFor  []string // held back until a dependency comes up
	held      []string // conflicts that hold the service back
	completed int      // replicas that finished with exit code 0, as their policy allows
	exist     int      // slots with a replica
	pending   int      // changes the plan will make
	drift     int      // of which changes made outside Git
	deferred  []Change
	any       bool // some container of the service exists at all
}

func assessService(in Input, svc *manifest.Service, containers []*Container, pending, outsideGit int, deferred []Change, conflicts []Conflict) ServiceHealth {
	sh := ServiceHealth{Service: svc.Name, Desired: svc.Spec.Replicas}
	f := serviceFindings{pending: pending, drift: outsideGit, deferred: deferred, any: len(containers) > 0}
	for _, c := range slotReplicas(svc, containers) {
		if c != nil {
			f.exist++
			observeReplica(in, svc, c, &sh, &f)
		}
	}
	for _, d := range deferred {
		if d.NotBefore.IsZero() {
			f.waitsFor = append(f.waitsFor, d.Reason)
			continue
		}
		f.problems = append(f.problems, d.Name+" keeps failing; next repair not before "+d.NotBefore.Format("15:04:05"))
	}
	f.waitsFor = slices.Compact(f.waitsFor)
	for _, c := range conflicts {
		f.held = append(f.held, string(c.Kind)+" "+c.Name+": "+c.Reason)
	}
	sh.Health, sh.Message = judgeService(in, svc, sh, f)
	return sh
}

// slotReplicas is, per slot 1..replicas, the container the plan keeps for
// it (nil where there is none).
func slotReplicas(svc *manifest.Service, containers []*Container) []*Container {
	want := svc.Spec.Replicas
	best := make([]*Container, want+1)
	for _, c := range containers {
		if c.Slot < 1 || c.Slot > want {
			continue
		}
		if cur := best[c.Slot]; cur == nil || preferContainer(c, cur, svc.Hash) {
			best[c.Slot] = c
		}
	}
	return best[1:]
}

// observeReplica counts one replica and notes what is wrong with it.
func observeReplica(in Input, svc *manifest.Service, c *Container, sh *ServiceHealth, f *serviceFindings) {
	name := dockerName(c.Name)
	if c.State == StateRunning {
		sh.Running++
		if c.Ready {
			sh.Ready++
		}
	}
	switch {
	case crashLooping(c):
		f.problems = append(f.problems, name+" is crash-looping: exit code "+strconv.Itoa(c.ExitCode)+", "+
			count(c.RestartCount, "restart", "restarts")+", "+statusOf(c)+"; see docker logs "+name)
	case c.State == StatePaused:
		f.problems = append(f.problems, name+" is paused outside Git; run docker unpause "+name)
	case c.State == StateExited && c.ExitCode == 0 &&
		(svc.Spec.Restart == manifest.RestartNever || svc.Spec.Restart == manifest.RestartOnFailure):
		// A clean exit under these policies is a finished job, not a failure.
		f.completed++
	case c.State == StateRunning && !c.Ready:
		why := ""
		if c.ReadyReason != "" {
			why = ": " + c.ReadyReason
		}
		if d := in.Options.ReadyDeadline; d > 0 && in.Options.Now.Sub(c.Created) > d {
			f.problems = append(f.problems, name+" has not become ready within "+d.String()+why+"; check its readiness probe and logs")
		} else {
			f.waiting = append(f.waiting, "waiting for "+name+" to become ready"+why)
		}
	}
}

// crashLooping reports a replica that keeps failing on its own: Docker is
// restarting it, it exited with an error nobody sent it, or it restarted
// repeatedly and is not ready now (past restarts of a replica that is
// ready again are history).
func crashLooping(c *Container) bool {
	killed := c.ExitCode == exitSIGKILL || c.ExitCode == exitSIGTERM
	return c.State == StateRestarting || (c.State == StateExited && c.ExitCode != 0 && !killed) ||
		(c.RestartCount >= 3 && !(c.State == StateRunning && c.Ready))
}

// judgeService turns the findings into a health and the message that
// says what is wrong and what to do, most pressing first.
func judgeService(in Input, svc *manifest.Service, sh ServiceHealth, f serviceFindings) (Health, string) {
	want := svc.Spec.Replicas
	ready := strconv.Itoa(sh.Ready) + "/" + strconv.Itoa(want) + " replicas ready"
	failed, rolloutFailed := in.Options.FailedRollouts[svc.Name]
	switch {
	case rolloutFailed && failed.Hash == svc.Hash:
		// The old replicas may still serve, but the revision is not
		// running and will not be until someone fixes it.
		return HealthDegraded, ready + "; rollout failed: " + failed.Failure.Detail() + "; " + nextAttempt(failed.NotBefore, in.Options.Now) +
			" (fix the image or manifest in a new commit)"
	case want > 0 && !f.any:
		return HealthMissing, missingMessage(f)
	case len(f.problems) > 0:
		return HealthDegraded, ready + "; " + strings.Join(f.problems, "; ")
	case len(f.waitsFor) > 0 && sh.Ready < want:
		// It waits on a dependency that cannot come up; it is as stuck
		// as the dependency.
		return HealthDegraded, ready + "; " + strings.Join(f.waitsFor, "; ")
	case f.exist < want && f.pending == 0 && len(f.held) > 0:
		return HealthDegraded, ready + "; held back by a conflict: " + strings.Join(f.held, "; ") + "; remove or rename it"
	case in.Options.NoSelfHeal && f.drift > 0:
		// Nothing will repair it, so it is not progressing.
		return HealthDegraded, ready + "; " + count(f.drift, "change", "changes") + " made outside Git not repaired: self-heal is off"
	case f.pending > 0:
		return HealthProgressing, ready + "; " + count(f.pending, "change", "changes") + " pending"
	case sh.Ready+f.completed < want:
		if len(f.waiting) > 0 {
			return HealthProgressing, ready + "; " + strings.Join(f.waiting, "; ")
		}
		return HealthProgressing, ready
	case f.completed > 0:
		return HealthHealthy, ready + " (" + strconv.Itoa(f.completed) + " completed with exit code 0; restart policy " + svc.Spec.Restart + ")"
	}
	return HealthHealthy, ready
}

// missingMessage explains a service without any replica.
func missingMessage(f serviceFindings) string {
	msg := "no replica exists"
	switch {
	case len(f.held) > 0:
		return msg + "; held back by a conflict: " + strings.Join(f.held, "; ") + "; remove or rename it"
	case len(f.waitsFor) > 0:
		return msg + "; " + strings.Join(f.waitsFor, "; ")
	case f.pending > 0:
		return msg + "; " + count(f.pending, "change", "changes") + " pending"
	case len(f.deferred) > 0:
		return msg + "; it keeps failing, next attempt not before " + f.deferred[0].NotBefore.Format("15:04:05")
	}
	return msg
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
