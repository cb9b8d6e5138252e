package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// DefaultBuildTimeout bounds one image build: a Dockerfile step that
// never ends must not hold the app's passes for ever.
const DefaultBuildTimeout = 30 * time.Minute

// buildTailLines is how much of a failed build's output its error keeps.
const buildTailLines = 20

// buildAPI is what building needs beyond dockerAPI; *client.Client has it.
// It is asserted, not part of dockerAPI, so the fakes of the applier's
// tests need not implement it.
type buildAPI interface {
	ImageBuild(ctx context.Context, buildContext io.Reader, options client.ImageBuildOptions) (client.ImageBuildResult, error)
	ImageTag(ctx context.Context, options client.ImageTagOptions) (client.ImageTagResult, error)
}

// EnsureImages makes sure every image the app builds from its revision
// exists: an image already there (the same context was built before, by
// this revision or another) costs one inspect; a missing one is built with
// the engine's classic builder from the context in the revision. progress
// may be nil. A build that fails on its own returns a *drift.BuildError;
// any other error is the engine's.
func (e *Engine) EnsureImages(ctx context.Context, app *manifest.App, progress func(drift.BuildEvent)) error {
	if progress == nil {
		progress = func(drift.BuildEvent) {}
	}
	for _, ref := range slices.Sorted(maps.Keys(app.Builds)) {
		bc := app.Builds[ref]
		ok, err := e.ImageExists(ctx, ref)
		if err != nil {
			return err
		}
		if ok {
			// The user's image: names the newest build of its service,
			// which after a revert is an earlier one.
			if err := e.tagImage(ctx, ref, bc.Tags); err != nil {
				return err
			}
			progress(drift.BuildEvent{Image: ref, Services: bc.Services, Phase: drift.BuildCached})
			continue
		}
		if err := e.buildImage(ctx, app.Name, bc, progress); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) tagImage(ctx context.Context, ref string, tags []string) error {
	api, ok := e.raw.(buildAPI)
	if !ok || len(tags) == 0 {
		return nil
	}
	for _, t := range tags {
		if _, err := api.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: t}); err != nil {
			return fmt.Errorf("tag %s as %s: %w", ref, t, err)
		}
	}
	return nil
}

// buildImage builds one image and streams its output.
func (e *Engine) buildImage(ctx context.Context, appName string, bc *manifest.BuildContext, progress func(drift.BuildEvent)) error {
	api, ok := e.raw.(buildAPI)
	if !ok {
		return fmt.Errorf("building %s: this engine connection cannot build images", bc.Ref)
	}
	tarball, err := ContextTar(bc.Files)
	if err != nil {
		return &drift.BuildError{Image: bc.Ref, Services: bc.Services, Err: err}
	}
	timeout := e.opts.BuildTimeout
	if timeout <= 0 {
		timeout = DefaultBuildTimeout
	}
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	progress(drift.BuildEvent{Image: bc.Ref, Services: bc.Services, Phase: drift.BuildStart})
	e.log.Debug("building image", "app", appName, "image", bc.Ref, "services", bc.Services, "context", bc.Build.Context)
	res, err := api.ImageBuild(bctx, bytes.NewReader(tarball), buildOptions(appName, bc))
	if err != nil {
		return e.buildFailure(ctx, bctx, bc, timeout, nil, err)
	}
	defer res.Body.Close()
	out := &buildOutput{emit: func(line string) {
		progress(drift.BuildEvent{Image: bc.Ref, Services: bc.Services, Phase: drift.BuildLog, Line: line})
	}}
	if err := out.read(res.Body); err != nil {
		return e.buildFailure(ctx, bctx, bc, timeout, out, err)
	}
	// The classic builder ends a failed build's stream with an error
	// message; a stream that just stops has not tagged anything, so the
	// image must be there before anyone runs it.
	if ok, err := e.ImageExists(ctx, bc.Ref); err != nil {
		return err
	} else if !ok {
		return &drift.BuildError{Image: bc.Ref, Services: bc.Services, Step: out.step, Tail: out.tail, Err: errors.New("the builder ended without producing the image")}
	}
	elapsed := time.Since(start)
	e.log.Debug("built image", "app", appName, "image", bc.Ref, "elapsed", elapsed.Round(time.Millisecond))
	progress(drift.BuildEvent{Image: bc.Ref, Services: bc.Services, Phase: drift.BuildDone, Elapsed: elapsed})
	return nil
}

// buildFailure types a failed build: the build's own fault (a step
// failed, it timed out) is a *drift.BuildError; an engine that went away
// or a cancelled pass is returned as it is.
func (e *Engine) buildFailure(ctx, bctx context.Context, bc *manifest.BuildContext, timeout time.Duration, out *buildOutput, err error) error {
	be := &drift.BuildError{Image: bc.Ref, Services: bc.Services, Err: err}
	if out != nil {
		be.Step, be.Tail = out.step, out.tail
	}
	var stepErr *engineerr.StreamError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(bctx.Err(), context.DeadlineExceeded):
		be.Timeout, be.Err = timeout, nil
		return be
	case errors.As(err, &stepErr):
		be.Err = errors.New(strings.TrimSpace(stepErr.Msg))
		return be
	}
	return fmt.Errorf("%w: building %s: %w", drift.ErrEngineUnreachable, bc.Ref, err)
}

// buildOptions are the engine's build parameters for bc: the classic
// builder (no BuildKit session needed), intermediate containers always
// removed (the engine is shared), the manifest's labels and labels that
// say driftless built it.
func buildOptions(appName string, bc *manifest.BuildContext) client.ImageBuildOptions {
	args := map[string]*string{}
	for k, v := range bc.Build.Args {
		args[k] = &v
	}
	labels := maps.Clone(bc.Build.Labels) // the front ends refused any of driftless's own
	if labels == nil {
		labels = map[string]string{}
	}
	labels[drift.LabelApp], labels[drift.LabelBuilt], labels[drift.LabelBuildTree] = appName, "true", bc.Build.TreeHash
	return client.ImageBuildOptions{
		Tags:        append([]string{bc.Ref}, bc.Tags...),
		Dockerfile:  bc.Build.Dockerfile,
		BuildArgs:   args,
		Target:      bc.Build.Target,
		NoCache:     bc.Build.NoCache,
		PullParent:  bc.Build.Pull,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		Labels:      labels,
	}
}

// buildOutput reads a build's JSON stream: it passes each line on, keeps
// the last ones and the step being run.
type buildOutput struct {
	emit    func(string)
	tail    []string
	step    string
	partial string
}

func (o *buildOutput) read(r io.Reader) error {
	err := engineerr.ReadJSONStream(r, o.write)
	o.flush()
	return err
}

// write splits stream text into lines; a line may arrive in pieces.
func (o *buildOutput) write(s string) {
	s = o.partial + s
	lines := strings.Split(s, "\n")
	o.partial = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		o.line(l)
	}
}

func (o *buildOutput) flush() {
	if o.partial != "" {
		o.line(o.partial)
		o.partial = ""
	}
}

func (o *buildOutput) line(l string) {
	l = strings.TrimRight(l, "\r ")
	if l == "" {
		return
	}
	if strings.HasPrefix(l, "Step ") {
		o.step = l
	}
	o.tail = append(o.tail, l)
	if len(o.tail) > buildTailLines {
		o.tail = o.tail[len(o.tail)-buildTailLines:]
	}
	if o.emit != nil {
		o.emit(l)
	}
}

// ContextTar is the build context as the engine takes it: a tar of the
// context's files, with fixed times and owners so the same tree always
// gives the same bytes.
func ContextTar(t *manifest.RepoTree) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	written := map[string]bool{}
	epoch := time.Unix(0, 0)
	for _, f := range t.Files {
		// Parent directories first, as docker build's own context has them.
		for _, d := range parentsOf(f.Path) {
			if written[d] {
				continue
			}
			written[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: epoch}); err != nil {
				return nil, err
			}
		}
		h := &tar.Header{Name: f.Path, ModTime: epoch, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		switch {
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Size, h.Mode = tar.TypeSymlink, f.Link, 0, 0o777
		case f.Exec:
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if f.Link == "" {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parentsOf lists p's parent directories, outermost first.
func parentsOf(p string) []string {
	var out []string
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}
