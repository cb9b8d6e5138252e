package native

import (
	"slices"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// rawJobDoc is a Job: a service's spec (its container) and when it runs.
type rawJobDoc struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   *rawMeta    `json:"metadata"`
	Spec       *rawJobSpec `json:"spec"`
}

// rawJobSpec is a service's spec plus the job's own fields. The embedded
// spec's fields are the job's spec fields, checked by the same code.
type rawJobSpec struct {
	rawServiceSpec
	RawJob
}

// RawJob is what makes a service a job, as written: the fields of a Job's
// spec beside the container's, and compose's x-driftless.job.
type RawJob struct {
	Type         string            `json:"type"`
	Schedule     string            `json:"schedule"`
	TimeZone     string            `json:"timeZone"`
	Concurrency  string            `json:"concurrency"`
	CatchUp      bool              `json:"catchUp"`
	Timeout      *yamlpos.Duration `json:"timeout"`
	BackoffLimit *int              `json:"backoffLimit"`
}

// jobOnlyServiceFields are service fields a job refuses: a job runs one
// container to completion, which is never scaled, published, probed or
// rolled.
var jobOnlyServiceFields = []struct {
	field string
	set   func(*rawServiceSpec) bool
}{
	{"spec.replicas", func(r *rawServiceSpec) bool { return r.Replicas != nil }},
	{"spec.ports", func(r *rawServiceSpec) bool { return len(r.Ports) > 0 }},
	{"spec.readiness", func(r *rawServiceSpec) bool { return r.Readiness != nil }},
	{"spec.minReadySeconds", func(r *rawServiceSpec) bool { return r.MinReadySeconds != nil }},
	{"spec.update", func(r *rawServiceSpec) bool { return r.Update != nil }},
	{"spec.dependsOn", func(r *rawServiceSpec) bool { return len(r.DependsOn) > 0 }},
	{"spec.dependsOnCondition", func(r *rawServiceSpec) bool { return len(r.DependsOnCondition) > 0 }},
	{"spec.dependsOnRestart", func(r *rawServiceSpec) bool { return len(r.DependsOnRestart) > 0 }},
	{"spec.imageUpdate", func(r *rawServiceSpec) bool { return r.ImageUpdate != nil }},
	{"spec.anonymousVolumes", func(r *rawServiceSpec) bool { return len(r.AnonymousVolumes) > 0 }},
	{"spec.volumesFrom", func(r *rawServiceSpec) bool { return len(r.VolumesFrom) > 0 }},
	{"spec.addresses", func(r *rawServiceSpec) bool { return len(r.Addresses) > 0 }},
	{"spec.postStart", func(r *rawServiceSpec) bool { return len(r.PostStart) > 0 }},
	{"spec.preStop", func(r *rawServiceSpec) bool { return len(r.PreStop) > 0 }},
}

// validateJob checks a Job: its container as a service's spec (the same
// checks, with restart never), then the job's own fields.
func validateJob(c *yamlpos.Collector, app string, o *object) {
	r := yamlpos.Reporter{Errs: c, Doc: o.doc}
	raw := o.jobRaw
	if raw == nil {
		r.Required("spec")
		return
	}
	for _, f := range jobOnlyServiceFields {
		if f.set(&raw.rawServiceSpec) {
			r.Errorf(f.field, "a Job runs one container to completion: remove %s", strings.TrimPrefix(f.field, "spec."))
		}
	}
	switch raw.Restart {
	case "":
		raw.Restart = manifest.RestartNever
	case manifest.RestartNever:
	default:
		r.Errorf("spec.restart", "a Job's container is never restarted: remove restart or set it to never (retries are backoffLimit)")
		raw.Restart = manifest.RestartNever
	}
	o.serviceRaw = &raw.rawServiceSpec
	validateService(c, app, o)
	o.serviceRaw = nil
	o.job = ValidateJob(r, "spec", &raw.RawJob)
	o.job.Name = o.name
	o.job.Service = o.service
	o.job.Source = o.source()
	o.job.Hash = manifest.HashJob(nil, o.job)
}

// ValidateJob checks and normalizes the fields that say when a job runs;
// prefix is the path they are under ("spec", "spec.job"). The Job it
// returns has no name, container or hash yet.
func ValidateJob(r yamlpos.Reporter, prefix string, raw *RawJob) manifest.Job {
	at := func(f string) string { return prefix + "." + f }
	j := manifest.Job{Type: raw.Type, TimeZone: raw.TimeZone, Concurrency: raw.Concurrency, CatchUp: raw.CatchUp, Timeout: manifest.DefaultJobTimeout}
	if j.Type == "" && raw.Schedule != "" {
		j.Type = manifest.JobScheduled
	}
	switch {
	case j.Type == "":
		r.Errorf(at("type"), "is required: %s", strings.Join(manifest.JobTypes, ", "))
	case !slices.Contains(manifest.JobTypes, j.Type):
		hint := ""
		if s := yamlpos.Suggest(j.Type, manifest.JobTypes); s != "" {
			hint = " (did you mean \"" + s + "\"?)"
		}
		r.Errorf(at("type"), "must be %s, got %q%s", strings.Join(manifest.JobTypes, ", "), j.Type, hint)
	}
	if j.Type == manifest.JobScheduled {
		j.Schedule = strings.TrimSpace(raw.Schedule)
		if raw.TimeZone != "" {
			if _, err := manifest.JobLocation(raw.TimeZone); err != nil {
				r.Errorf(at("timeZone"), "%v", err)
			}
		}
		if _, err := manifest.ParseJobSchedule(j.Schedule, ""); err != nil {
			r.Errorf(at("schedule"), "%v", err)
		}
		switch j.Concurrency {
		case "":
			j.Concurrency = manifest.ConcurrencyForbid
		case manifest.ConcurrencyForbid, manifest.ConcurrencyAllow:
		default:
			r.Errorf(at("concurrency"), "must be forbid or allow, got %q", j.Concurrency)
		}
	} else {
		for field, set := range map[string]bool{"schedule": raw.Schedule != "", "timeZone": raw.TimeZone != "", "concurrency": raw.Concurrency != "", "catchUp": raw.CatchUp} {
			if set {
				r.Errorf(at(field), "only a scheduled job has %s: remove it, or set type: scheduled", field)
			}
		}
	}
	if raw.Timeout != nil {
		r.Duration(at("timeout"), raw.Timeout, time.Second)
		if d, err := manifest.ParseDuration(string(*raw.Timeout)); err == nil && d > 0 {
			j.Timeout = d
		}
	}
	r.IntRange(at("backoffLimit"), raw.BackoffLimit, 0, manifest.MaxJobBackoffLimit)
	if raw.BackoffLimit != nil {
		j.BackoffLimit = *raw.BackoffLimit
	}
	return j
}
