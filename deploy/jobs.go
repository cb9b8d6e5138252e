package deploy

import (
	"context"
	"fmt"
	"time"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/jobrun"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// RunJob makes one run of the app's job at revision (see deploy/jobrun):
// its image as the pull policy says, its repository files and secrets on
// disk, then the container to completion. The run's containers carry the
// app's label and drift.LabelJob, which keeps them out of observation.
func (e *Engine) RunJob(ctx context.Context, app *manifest.App, job *manifest.Job, revision string) drift.JobRun {
	started := time.Now()
	fail := func(err error) drift.JobRun {
		return drift.JobRun{Job: job.Name, Type: job.Type, Revision: revision, JobHash: job.Hash, Started: started, ExitCode: -1, Error: err.Error(), Attempts: 1}
	}
	svc := job.Service
	if err := e.jobImage(ctx, app.Name, &svc); err != nil {
		return fail(err)
	}
	if err := e.files.MaterializeService(app, &svc); err != nil {
		return fail(err)
	}
	return jobrun.Run(ctx, e.api, jobrun.Input{App: app, Job: job, Revision: revision, FilesDir: e.opts.FilesDir, SecretsDir: e.opts.SecretsDir, StateDir: e.opts.StateDir, Remote: e.opts.Remote})
}

// RemoveJobRuns removes the kept runs of the app's jobs that keep says
// are no longer declared.
func (e *Engine) RemoveJobRuns(ctx context.Context, app string, keep func(job string) bool) {
	jobrun.Remove(ctx, e.api, app, keep)
}

// jobImage gets a job's image as its pull policy says.
func (e *Engine) jobImage(ctx context.Context, app string, svc *manifest.Service) error {
	ref := svc.Spec.Image
	if svc.PullPolicy != manifest.PullAlways {
		_, present, err := e.inspectImage(ctx, ref)
		if err != nil {
			return err
		}
		if present {
			return nil
		}
		if svc.PullPolicy == manifest.PullNever {
			return fmt.Errorf("image %s is not on the engine and pullPolicy is never", ref)
		}
	}
	return e.pullFor(ctx, app, ref, dockerspec.Platform(&svc.Spec), func(string) {})
}
