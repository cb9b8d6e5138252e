package manifest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// KindJob is the native kind of a job: a service that runs one container
// to completion instead of being kept running.
const KindJob = "Job"

// Job types: when a job runs.
const (
	// JobPreSync runs with the new revision's spec before any service of
	// that revision is changed; a failure stops the release.
	JobPreSync = "pre-sync"
	// JobPostSync runs after a rollout that changed something; its result
	// is recorded (and counts as a regression for the release watch).
	JobPostSync = "post-sync"
	// JobScheduled runs on its cron schedule.
	JobScheduled = "scheduled"
)

// JobTypes are the job types, in the order messages list them.
var JobTypes = []string{JobPreSync, JobPostSync, JobScheduled}

// Concurrency policies of a scheduled job.
const (
	ConcurrencyForbid = "forbid" // a run due while one runs is skipped (default)
	ConcurrencyAllow  = "allow"  // runs may overlap
)

// Job defaults.
const (
	DefaultJobTimeout = 10 * time.Minute
	// MaxJobBackoffLimit bounds the retries of a failed run.
	MaxJobBackoffLimit = 10
)

// Job is one declared job. Its container is described by Service, the same
// spec a service has (image, command, env, volumes, secrets, networks...),
// with one replica and restart never; the job's own fields say when it
// runs and how long it may take.
type Job struct {
	Name string `json:"name"`
	Type string `json:"type"` // JobPreSync, JobPostSync or JobScheduled
	// Schedule is a cron spec ("0 3 * * *", "@every 5m"); scheduled jobs
	// only.
	Schedule string `json:"schedule,omitempty"`
	// TimeZone is the IANA zone Schedule is read in; "" is UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// Concurrency is ConcurrencyForbid or ConcurrencyAllow.
	Concurrency string `json:"concurrency,omitempty"`
	// CatchUp runs a scheduled run missed while the agent was down once
	// when it starts.
	CatchUp bool `json:"catchUp,omitempty"`
	// Timeout bounds one run; a run still going then is killed and failed.
	Timeout time.Duration `json:"timeout"`
	// BackoffLimit is how many times a failed run is retried at once.
	BackoffLimit int `json:"backoffLimit,omitempty"`
	// Service is the job's container spec; Service.Name is the job's name.
	Service Service `json:"service"`
	// Hash covers the container spec and the job's fields: a changed job
	// is a new job (a pre-sync job that changed runs again).
	Hash   string   `json:"hash"`
	Source Position `json:"source"`
}

// Job returns the named job, or nil.
func (a *App) Job(name string) *Job {
	for i := range a.Jobs {
		if a.Jobs[i].Name == name {
			return &a.Jobs[i]
		}
	}
	return nil
}

// JobsOf returns the app's jobs of one type, in name order.
func (a *App) JobsOf(typ string) []*Job {
	var out []*Job
	for i := range a.Jobs {
		if a.Jobs[i].Type == typ {
			out = append(out, &a.Jobs[i])
		}
	}
	return out
}

// HashJob is the hash of a job: its container spec's hash (see
// HashService) and the fields that say when and how it runs.
func HashJob(key SecretKey, j Job) string {
	return hashJSON(KindJob, nil, struct {
		Service      string        `json:"service"`
		Type         string        `json:"type"`
		Schedule     string        `json:"schedule,omitempty"`
		TimeZone     string        `json:"timeZone,omitempty"`
		Concurrency  string        `json:"concurrency,omitempty"`
		CatchUp      bool          `json:"catchUp,omitempty"`
		Timeout      time.Duration `json:"timeout"`
		BackoffLimit int           `json:"backoffLimit,omitempty"`
	}{HashService(key, j.Service.Labels, j.Service.Spec), j.Type, j.Schedule, j.TimeZone, j.Concurrency, j.CatchUp, j.Timeout, j.BackoffLimit})
}

// WithJobServices runs fn on the app with its jobs' container specs
// appended to Services, then takes them back: the checks and resolvers
// written for services (host power, limits, secrets, repository files,
// builds) judge and fill in jobs the same way, with no second copy. The
// job services keep whatever fn changed in them.
func (a *App) WithJobServices(fn func(*App)) {
	n := len(a.Services)
	for _, j := range a.Jobs {
		a.Services = append(a.Services, j.Service)
	}
	fn(a)
	for i := range a.Jobs {
		a.Jobs[i].Service = a.Services[n+i]
	}
	a.Services = a.Services[:n:n]
}

// TakeJobs moves the services named by jobs out of Services into Jobs,
// each job's container spec being that service: a front end that maps a
// job as a service (compose's x-driftless.job) checks and resolves it with
// the services, then calls TakeJobs last.
func (a *App) TakeJobs(jobs []Job) {
	for _, j := range jobs {
		svc := a.Service(j.Name)
		if svc == nil {
			continue
		}
		j.Service = *svc
		j.Hash = HashJob(nil, j)
		a.Jobs = append(a.Jobs, j)
		a.Services = slices.DeleteFunc(a.Services, func(s Service) bool { return s.Name == j.Name })
	}
	slices.SortFunc(a.Jobs, func(x, y Job) int { return strings.Compare(x.Name, y.Name) })
}

// ParseJobSchedule reads a job's cron spec (five fields or a descriptor
// such as "@every 5m" or "@daily") in timeZone ("" is UTC).
func ParseJobSchedule(spec, timeZone string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("is required for a scheduled job: a cron spec (\"0 3 * * *\", \"@every 10m\")")
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, fmt.Errorf("%q: set the time zone with timeZone, not in the spec", spec)
	}
	loc, err := JobLocation(timeZone)
	if err != nil {
		return nil, err
	}
	if timeZone != "" {
		spec = "CRON_TZ=" + loc.String() + " " + spec
	}
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("%q is not a cron spec (\"0 3 * * *\", \"@every 10m\"): %v", strings.TrimPrefix(spec, "CRON_TZ="+loc.String()+" "), err)
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok && every.Delay < time.Second {
		return nil, fmt.Errorf("%q is too short: run a job at most once a second", spec)
	}
	return sched, nil
}

// JobLocation is the time zone a schedule is read in; "" is UTC.
func JobLocation(timeZone string) (*time.Location, error) {
	if timeZone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(timeZone)
	if err != nil || strings.Contains(timeZone, "..") {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as \"Europe/Paris\" or \"UTC\"", timeZone)
	}
	return loc, nil
}

// JobContainerName is the Docker name of one run of a job: the app's
// prefix, "job", the job's name and the run's start time, so runs never
// collide with replicas ("<app>-<service>-<slot>") or with each other.
func JobContainerName(app, job string, start time.Time) string {
	return fmt.Sprintf("%s-job-%s-%d", app, job, start.UnixMilli())
}
