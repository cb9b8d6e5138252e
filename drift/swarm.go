package drift

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// The Swarm target's section of the planner. Swarm schedules and rolls
// tasks itself, so the plan acts on whole services (create, update, scale,
// remove) and overlay networks, never on containers: driftless must not
// fight Swarm's rolling updates. Identity comes from the same labels as on
// one engine, put on the service spec.

// ServiceName is the Swarm service name of a declared service.
func ServiceName(app, service string) string { return app + "-" + service }

// computeSwarm is Compute for manifest.TargetSwarm.
func (p *planner) computeSwarm() {
	p.networks()
	p.swarmObjects()
	p.swarmServices()
	if len(p.plan.Changes) == 0 && len(p.plan.Deferred) == 0 {
		// Old versions go only once every service runs the desired
		// spec: a rollout under way, or one Swarm rolled back, may
		// still need them, and their removal must not read as a sync
		// of a revision Swarm refused.
		p.pruneSwarmObjects()
	}
	p.pruneNetworks()
}

// SwarmObjectName is the Swarm name of a version of a compose secret or
// config: its content hash is part of the name, since Swarm cannot change
// one in place. A changed file is a new object, and the services that
// use it are updated to it.
func SwarmObjectName(app, name, hash string) string {
	return app + "_" + name + "_" + hash[:min(8, len(hash))]
}

// desiredObjects are the secrets and configs the services use, by their
// versioned name.
func (p *planner) desiredObjects() map[string]SwarmObject {
	out := map[string]SwarmObject{}
	for _, s := range p.desired.Services {
		for _, b := range s.Spec.Binds {
			if b.Object == nil {
				continue
			}
			name := SwarmObjectName(p.app, b.Object.Name, b.ContentHash)
			out[name] = SwarmObject{Name: name, Kind: Kind(b.Object.Kind), App: p.app, Resource: b.Object.Name, Hash: b.ContentHash}
		}
		// Decrypted secrets are versioned by the agent's keyed digest of
		// their value, never a plain hash of it.
		for _, ref := range s.Spec.Secrets {
			name := SwarmObjectName(p.app, ref.Name, ref.Digest)
			out[name] = SwarmObject{Name: name, Kind: KindSecret, App: p.app, Resource: ref.Name, Hash: ref.Digest}
		}
	}
	return out
}

// swarmObjects creates the versions of secrets and configs that do not
// exist yet, before the services that use them.
func (p *planner) swarmObjects() {
	have := map[string]bool{}
	for _, o := range p.in.Actual.Objects {
		if o.App == p.app {
			have[string(o.Kind)+" "+o.Name] = true
		}
	}
	want := p.desiredObjects()
	for _, name := range slices.Sorted(maps.Keys(want)) {
		o := want[name]
		if have[string(o.Kind)+" "+o.Name] {
			continue
		}
		p.plan.Changes = append(p.plan.Changes, Change{Action: ActionCreate, Kind: o.Kind, Name: o.Name, Resource: o.Resource,
			Cause: CauseGit, Reason: string(o.Kind) + " " + o.Resource + " at content " + o.Hash[:min(8, len(o.Hash))] + " (" + p.revisionPhrase() + ")"})
	}
}

// pruneSwarmObjects removes the app's versions of secrets and configs
// that nothing declares and no service's current or previous spec uses
// (Swarm needs the previous ones to roll back): an old version goes one
// update after the one that replaced it.
func (p *planner) pruneSwarmObjects() {
	want := p.desiredObjects()
	used := map[string]bool{}
	for _, s := range p.in.Actual.Services {
		for _, n := range s.Objects {
			used[n] = true
		}
	}
	objs := slices.Clone(p.in.Actual.Objects)
	slices.SortFunc(objs, func(a, b SwarmObject) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	for _, o := range objs {
		if o.App != p.app || used[o.Name] {
			continue
		}
		if _, declared := want[o.Name]; declared {
			continue
		}
		p.plan.Changes = append(p.plan.Changes, Change{Action: ActionRemove, Kind: o.Kind, Name: o.Name, ID: o.ID, Resource: o.Resource,
			Cause: CauseGit, Reason: "old version, no longer used by any service"})
	}
}

func (p *planner) swarmServices() {
	owned := map[string]*SwarmService{}
	var undeclared []*SwarmService
	for i := range p.in.Actual.Services {
		s := &p.in.Actual.Services[i]
		if s.App != p.app {
			continue
		}
		if p.desired.Service(s.Service) == nil {
			undeclared = append(undeclared, s)
			continue
		}
		if prev, ok := owned[s.Service]; !ok || s.ID < prev.ID {
			if ok {
				undeclared = append(undeclared, prev)
			}
			owned[s.Service] = s
		} else {
			undeclared = append(undeclared, s)
		}
	}
	services := slices.Clone(p.desired.Services)
	slices.SortFunc(services, func(a, b manifest.Service) int { return cmp.Compare(a.Name, b.Name) })
	for i := range services {
		if c, ok := p.swarmService(&services[i], owned[services[i].Name]); ok {
			p.plan.Changes = append(p.plan.Changes, c)
		}
	}
	slices.SortFunc(undeclared, func(a, b *SwarmService) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	for _, s := range undeclared {
		reason := "service " + s.Service + " is no longer declared in " + p.revisionPhrase()
		if p.desired.Service(s.Service) != nil {
			reason = "extra service for " + s.Service
		}
		p.plan.Changes = append(p.plan.Changes, Change{Action: ActionRemove, Kind: KindService, Name: s.Name, ID: s.ID,
			Service: s.Service, Cause: CauseGit, Reason: reason})
	}
}

// swarmService is the one change (or none) that makes a service match.
// An update replaces the whole spec (Swarm rolls the tasks); a scale only
// sets the replica count.
func (p *planner) swarmService(svc *manifest.Service, have *SwarmService) (Change, bool) {
	name := ServiceName(p.app, svc.Name)
	applied, known := p.in.Options.Applied[svc.Name]
	global := svc.Spec.Swarm != nil && svc.Spec.Swarm.Global
	if have == nil {
		if why, taken := p.foreignServices()[name]; taken {
			p.conflict(Conflict{Kind: KindService, Name: name, Reason: why, Service: svc.Name})
			return Change{}, false
		}
		c := Change{Action: ActionCreate, Kind: KindService, Name: name, Service: svc.Name, Cause: CauseGit,
			Reason: "declared in " + p.revisionPhrase()}
		if known && applied.Hash == svc.Hash {
			c.Cause, c.Reason = CauseDrift, "service was removed outside Git; recreated"
		}
		return c, true
	}
	base := Change{Kind: KindService, Name: name, ID: have.ID, Service: svc.Name}
	if have.SpecHash != svc.Hash {
		if p.rolledBack(have, svc) {
			// Swarm refused this spec and went back to the previous one:
			// updating again would fail the same way. Hold it until a new
			// commit; Assess reports the service Degraded.
			base.Action, base.Cause = ActionUpdate, CauseGit
			base.Reason = "Swarm rolled the update to " + p.revisionPhrase() + " back (" + cmp.Or(have.UpdateMessage, have.UpdateState) + "); waiting for a new commit"
			base.Fields = []FieldChange{hashField(have.SpecHash, svc.Hash)}
			p.plan.Deferred = append(p.plan.Deferred, base)
			return Change{}, false
		}
		base.Action, base.Cause, base.Reason = ActionUpdate, CauseGit, "spec changed in "+p.revisionPhrase()
		base.Fields = []FieldChange{hashField(have.SpecHash, svc.Hash)}
		if !SameImage(have.Image, svc.Spec.Image) {
			base.Fields = append(base.Fields, FieldChange{Path: "image", Before: have.Image, After: svc.Spec.Image})
		}
		if !global && have.Replicas != svc.Spec.Replicas {
			base.Fields = append(base.Fields, FieldChange{Path: "replicas", Before: strconv.Itoa(have.Replicas), After: strconv.Itoa(svc.Spec.Replicas)})
		}
		if have.Global != global {
			base.Fields = append(base.Fields, FieldChange{Path: "mode", Before: modeWord(have.Global), After: modeWord(global)})
		}
		return base, true
	}
	if fields := p.swarmDrift(svc, have); len(fields) > 0 {
		// The whole declared spec is applied again: Swarm drops what was
		// added by hand and rolls the tasks.
		base.Action, base.Cause, base.Fields = ActionUpdate, CauseDrift, fields
		base.Reason = "changed outside Git: " + joinPaths(fields) + "; reverted"
		if !global && have.Replicas != svc.Spec.Replicas {
			// The update sets the replica count too.
			base.Fields = append(base.Fields, FieldChange{Path: "replicas", Before: strconv.Itoa(have.Replicas), After: strconv.Itoa(svc.Spec.Replicas)})
		}
		return base, true
	}
	if !global && have.Replicas != svc.Spec.Replicas {
		base.Action, base.Cause = ActionScale, CauseGit
		base.Reason = "replicas changed in " + p.revisionPhrase()
		if !known || applied.Replicas == svc.Spec.Replicas {
			base.Cause, base.Reason = CauseDrift, "scaled outside Git; scaled back"
		}
		base.Fields = []FieldChange{{Path: "replicas", Before: strconv.Itoa(have.Replicas), After: strconv.Itoa(svc.Spec.Replicas)}}
		return base, true
	}
	return Change{}, false
}

// swarmDrift are the fields of the running spec that differ from the
// declared one, with the spec hash unchanged: someone changed the service
// by hand (docker service update) and kept driftless's labels.
func (p *planner) swarmDrift(svc *manifest.Service, have *SwarmService) []FieldChange {
	want := p.in.Options.SwarmSpecs[svc.Name]
	if want == nil || have.Spec == nil {
		if SameImage(have.Image, svc.Spec.Image) {
			return nil
		}
		return []FieldChange{{Path: "image", Before: have.Image, After: svc.Spec.Image}}
	}
	return DiffSwarmSpec(have.Spec, want, svc.Spec.IsSecretEnv)
}

// DiffSwarmSpec lists the fields that differ between a running and a
// declared Swarm spec, sorted by path; a field only one side has is
// "(unset)" on the other. The values of environment variables secret
// says are secret show as "(sensitive)".
func DiffSwarmSpec(running, declared SwarmSpec, secret func(key string) bool) []FieldChange {
	var out []FieldChange
	paths := slices.Sorted(maps.Keys(running))
	for k := range declared {
		if _, ok := running[k]; !ok {
			paths = append(paths, k)
		}
	}
	slices.Sort(paths)
	for _, path := range paths {
		b, inRunning := running[path]
		a, inDeclared := declared[path]
		if inRunning && inDeclared && a == b {
			continue
		}
		if k, isEnv := strings.CutPrefix(path, "env."); isEnv && secret != nil && secret(k) {
			b, a = Sensitive, Sensitive
		}
		if !inRunning {
			b = unset
		}
		if !inDeclared {
			a = unset
		}
		out = append(out, FieldChange{Path: path, Before: b, After: a})
	}
	return out
}

// rolledBack reports whether Swarm rolled back (or is rolling back) an
// update to the service's desired spec. Swarm's own rollback clears the
// previous spec, so the failed rollout the applier reported (by hash)
// says which spec it refused; a `docker service rollback` keeps it.
func (p *planner) rolledBack(s *SwarmService, svc *manifest.Service) bool {
	switch s.UpdateState {
	case SwarmUpdateRollbackStarted, SwarmUpdateRollbackPaused, SwarmUpdateRollbackCompleted:
		f, failed := p.in.Options.FailedRollouts[svc.Name]
		return s.PreviousSpecHash == svc.Hash || (failed && f.Hash == svc.Hash)
	}
	return false
}

// foreignServices are the names of Swarm services that are not this
// app's: of another app, or without driftless's labels.
func (p *planner) foreignServices() map[string]string {
	out := map[string]string{}
	for _, s := range p.in.Actual.Services {
		if s.App != p.app {
			out[s.Name] = foreignWhy("service", s.App)
		}
	}
	return out
}

func modeWord(global bool) string {
	if global {
		return "global"
	}
	return "replicated"
}

// SameImage compares image references as Swarm stores them: a pinned
// digest ("@sha256:…") and an implicit ":latest" or "docker.io/library/"
// do not make two references differ.
func SameImage(a, b string) bool { return NormalImage(a) == NormalImage(b) }

// NormalImage is an image reference as SameImage compares it: no pinned
// digest, no implicit "docker.io/library/", an explicit tag.
func NormalImage(ref string) string {
	if i := strings.Index(ref, "@"); i > 0 {
		ref = ref[:i]
	}
	ref = strings.TrimPrefix(ref, "docker.io/")
	ref = strings.TrimPrefix(ref, "library/")
	if !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
		ref += ":latest"
	}
	return ref
}

// assessSwarm judges each declared Swarm service from its tasks (the
// Containers rows of target swarm) and Swarm's update state. A rollout is
// complete when Swarm says the update completed (or there was none) and
// every task runs; Swarm reports a task with a healthcheck as running only
// once it is healthy. A paused or rolled-back update is Degraded, never
// a success.
func assessSwarm(in Input, plan Plan, out AppHealth) AppHealth {
	services := slices.Clone(in.Desired.Services)
	slices.SortFunc(services, func(a, b manifest.Service) int { return cmp.Compare(a.Name, b.Name) })
	for i := range services {
		sh := assessSwarmService(in, plan, &services[i])
		if sh.Health.rank() > out.Health.rank() {
			out.Health = sh.Health
		}
		out.Services = append(out.Services, sh)
	}
	return out
}

func assessSwarmService(in Input, plan Plan, svc *manifest.Service) ServiceHealth {
	var have *SwarmService
	for i := range in.Actual.Services {
		if s := &in.Actual.Services[i]; s.App == in.App && s.Service == svc.Name && (have == nil || s.ID < have.ID) {
			have = s
		}
	}
	sh := ServiceHealth{Service: svc.Name, Desired: svc.Spec.Replicas}
	for _, c := range in.Actual.Containers {
		if c.App != in.App || c.Service != svc.Name {
			continue
		}
		if c.State == StateRunning {
			sh.Running++
		}
		if c.Ready {
			sh.Ready++
		}
	}
	if svc.Spec.Swarm != nil && svc.Spec.Swarm.Global {
		sh.Desired = max(sh.Running, 1) // one per eligible node: Swarm knows how many
		if have != nil {
			sh.Desired = max(sh.Desired, countTasks(in, svc.Name))
		}
	}
	f := findingsOf(plan, svc.Name)
	f.unstarted, f.unstartedWhy = unstartedTasks(in, svc.Name)
	sh.Health, sh.Message = judgeSwarm(in, svc.Hash, have, sh, f)
	return sh
}

// unstartedTasks are the tasks Swarm wants running that it says why it
// cannot start, chiefly ones its scheduler cannot place ("no suitable
// node": a node drained or down, a constraint no node meets, too few
// resources). Swarm keeps them pending and places them once a node fits;
// until then the service runs fewer tasks than it declares, which needs
// a person, not patience.
func unstartedTasks(in Input, service string) (n int, groups []string) {
	names := map[string][]string{}
	var reasons []string
	for _, c := range in.Actual.Containers {
		if c.App != in.App || c.Service != service || c.State == StateRunning || c.ReadyReason == "" {
			continue
		}
		// Tasks held back for the same reason are named together.
		why := string(c.State) + ": " + c.ReadyReason
		if names[why] == nil {
			reasons = append(reasons, why)
		}
		names[why] = append(names[why], c.Name)
		n++
	}
	for _, why := range reasons {
		groups = append(groups, strings.Join(names[why], ", ")+" "+why)
	}
	return n, groups
}

// updateStuck: Swarm's update state says the declared spec is not what
// runs (paused, rolled back), or Swarm is rolling back to it.
func updateStuck(have *SwarmService, hash string) bool {
	switch have.UpdateState {
	case SwarmUpdatePaused, SwarmUpdateRollbackPaused, SwarmUpdateRollbackStarted:
		return true
	case SwarmUpdateRollbackCompleted:
		// Left over after a rollback; a failure only while the spec
		// Swarm went back to is not the declared one.
		return have.SpecHash != hash
	}
	return false
}

func updateHealth(have *SwarmService, hash, ready, errs string) (Health, string) {
	msg := cmp.Or(have.UpdateMessage, have.UpdateState)
	switch {
	case have.UpdateState == SwarmUpdatePaused || have.UpdateState == SwarmUpdateRollbackPaused:
		return HealthDegraded, ready + "; Swarm paused the update: " + msg + errs + " (fix it in a new commit)"
	case have.SpecHash == hash:
		// Back to the declared spec (an update made by hand failed):
		// Swarm is restoring what Git asks for.
		return HealthProgressing, ready + "; Swarm is rolling back to the declared spec" + errs
	}
	return HealthDegraded, ready + "; Swarm rolled the update back: " + msg + errs
}

type swarmFindings struct {
	pending, drift int
	deferred, held []string
	// unstarted: tasks Swarm cannot start, and why, grouped by reason
	// (not from the plan: from the observed tasks).
	unstarted    int
	unstartedWhy []string
}

// findingsOf is what the plan says about one service.
func findingsOf(plan Plan, service string) swarmFindings {
	var f swarmFindings
	for _, c := range plan.Changes {
		if c.Service == service {
			f.pending++
			if c.Cause == CauseDrift {
				f.drift++
			}
		}
	}
	for _, c := range plan.Deferred {
		if c.Service == service {
			f.deferred = append(f.deferred, c.Reason)
		}
	}
	for _, c := range plan.Conflicts {
		if c.Service == service {
			f.held = append(f.held, c.Name+": "+c.Reason)
		}
	}
	return f
}

// failedAt is the failure the applier saw of a rollout of the service
// at hash, if any.
func failedAt(in Input, service, hash string) *Failure {
	if f, ok := in.Options.FailedRollouts[service]; ok && f.Hash == hash {
		return &f.Failure
	}
	return nil
}

func countTasks(in Input, service string) int {
	n := 0
	for _, c := range in.Actual.Containers {
		if c.App == in.App && c.Service == service {
			n++
		}
	}
	return n
}

func judgeSwarm(in Input, hash string, have *SwarmService, sh ServiceHealth, f swarmFindings) (Health, string) {
	ready := strconv.Itoa(sh.Ready) + "/" + strconv.Itoa(sh.Desired) + " tasks ready"
	errs := ""
	if have != nil && len(have.TaskErrors) > 0 {
		errs = "; task errors: " + strings.Join(have.TaskErrors[:min(3, len(have.TaskErrors))], "; ")
	}
	switch {
	case have == nil && len(f.held) > 0:
		return HealthDegraded, "service does not exist; held back by a conflict: " + strings.Join(f.held, "; ") + "; remove or rename it"
	case have == nil:
		return HealthMissing, "service does not exist; " + count(f.pending, "change", "changes") + " pending"
	case len(f.deferred) > 0:
		return HealthDegraded, ready + "; " + strings.Join(f.deferred, "; ") + errs
	case updateStuck(have, hash):
		return updateHealth(have, hash, ready, errs)
	case in.Options.NoSelfHeal && f.drift > 0:
		return HealthDegraded, ready + "; " + count(f.drift, "change", "changes") + " made outside Git not repaired: self-heal is off"
	case f.pending > 0:
		return HealthProgressing, ready + "; " + count(f.pending, "change", "changes") + " pending"
	case have.UpdateState == SwarmUpdateUpdating:
		return HealthProgressing, ready + "; Swarm is rolling the update" + errs
	case sh.Ready < sh.Desired && failedAt(in, have.Service, hash) != nil:
		// The applier gave up waiting for the tasks (Swarm stalled, even
		// after a forced update): not something more waiting fixes.
		return HealthDegraded, ready + "; rollout failed: " + failedAt(in, have.Service, hash).Summary + errs
	case sh.Running > sh.Desired:
		// Swarm has not removed the tasks of a scale-down yet.
		return HealthProgressing, strconv.Itoa(sh.Running) + " tasks running for " + strconv.Itoa(sh.Desired) + " replicas"
	case sh.Ready < sh.Desired && f.unstarted > 0:
		return HealthDegraded, ready + "; Swarm cannot start " + count(f.unstarted, "task", "tasks") + ": " +
			strings.Join(f.unstartedWhy[:min(3, len(f.unstartedWhy))], "; ") + errs +
			" (check the nodes with docker node ls: one drained, paused or down, or none that meets the placement constraints or resources)"
	case sh.Ready < sh.Desired && errs != "":
		return HealthDegraded, ready + errs
	case sh.Ready < sh.Desired:
		return HealthProgressing, ready
	}
	return HealthHealthy, ready
}
