package compose

import (
	"slices"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/native"
)

// applyJob makes the service a job (x-driftless.job), checked with the
// native format's rules: a job's container runs once to completion, so it
// is not restarted, scaled or published.
func (sm *serviceMap) applyJob(raw *native.RawJob) {
	vc := &yamlpos.Collector{}
	j := native.ValidateJob(yamlpos.Reporter{Errs: vc, Doc: sm.extDoc}, "spec.job", raw)
	for _, e := range vc.Errs {
		e.Field = sm.extField(e.Field)
		sm.m.errs.Errs = append(sm.m.errs.Errs, e)
	}
	if sm.spec.Restart != manifest.RestartNever {
		sm.refuse("restart", `a job's container is never restarted: set restart: "no" (retries are x-driftless.job.backoffLimit)`)
	}
	if sm.spec.Replicas != 1 {
		sm.refuse("deploy.replicas", "a job runs one container: remove deploy.replicas")
	}
	if len(sm.spec.Ports) > 0 {
		sm.refuse("ports", "a job publishes no ports: remove ports")
	}
	for _, dep := range sm.spec.DependsOnRestart {
		field := sm.depFrom[dep] + ".restart"
		sm.refuseAt(sm.m.ix.at(field), field, "a job is not replaced when its dependency is: remove restart: true")
	}
	if len(sm.spec.PostStart)+len(sm.spec.PreStop) > 0 {
		sm.refuse(map[bool]string{true: "post_start", false: "pre_stop"}[len(sm.spec.PostStart) > 0], "a job runs to completion: run the command in the job itself")
	}
	if len(sm.spec.VolumesFrom) > 0 {
		sm.refuse("volumes_from", "a job runs before the services it would mount from are changed: share a named volume instead")
	}
	if sm.spec.MinReady != nil {
		ref := sm.fields["minReadySeconds"]
		sm.refuseAt(ref.Pos, ref.Field, "a job is not ready, it completes: remove it")
	}
	if sm.imageUpdate != nil {
		sm.refuseAt(sm.extDoc.At("spec.imageUpdate"), sm.path("x-driftless.imageUpdate"), "a job follows no tag: remove imageUpdate")
	}
	j.Name = sm.name
	j.Source = sm.m.ix.firstKeyAt(sm.base)
	sm.job = &j
}

// checkJobs refuses a service that depends on a job: a job is not a
// service that comes up, and a pre-sync job already runs first.
func (m *composeMapper) checkJobs() {
	for _, sm := range m.services {
		if sm.job != nil {
			continue
		}
		for _, other := range m.services {
			if other.job == nil || !slices.Contains(sm.spec.DependsOn, other.name) {
				continue
			}
			field, ok := sm.depFrom[other.name]
			if !ok {
				field = sm.path("depends_on")
			}
			sm.refuseAt(m.ix.at(field), field, "%q is a job, not a service: remove it from depends_on (a pre-sync job runs before any service changes)", other.cname)
		}
	}
}
