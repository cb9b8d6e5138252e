package yamlpos

import (
	"path"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// Reporter adds errors located by field path within one document.
type Reporter struct {
	Errs *Collector
	Doc  *DocCtx
}

func (r Reporter) Errorf(field, format string, args ...any) {
	r.Errs.Add(r.Doc.At(field), field, format, args...)
}

// Required reports a missing field, unless it is present but malformed
// (already reported by the walker).
func (r Reporter) Required(field string) {
	if !r.Doc.Failed[field] {
		r.Errorf(field, "is required")
	}
}

func (r Reporter) Port(field string, p int) {
	if p < 1 || p > 65535 {
		r.Errorf(field, "must be between 1 and 65535, got %d", p)
	}
}

func (r Reporter) IntRange(field string, v *int, lo, hi int) {
	switch {
	case v == nil:
	case *v < lo:
		r.Errorf(field, "must be >= %d", lo)
	case *v > hi:
		r.Errorf(field, "must be <= %d", hi)
	}
}

// VolumeFields locates a volume's driver and options for the policy's
// messages (see Volume.Fields); at is where a written path is, or its
// nearest written ancestor.
func VolumeFields(at func(string) manifest.Position, driver, opts string, driverOpts map[string]string) map[string]manifest.FieldRef {
	fields := map[string]manifest.FieldRef{
		"driver":     {Pos: at(driver), Field: driver},
		"driverOpts": {Pos: at(opts), Field: opts},
	}
	for k := range driverOpts {
		written := ChildPath(opts, k)
		fields[ChildPath("driverOpts", k)] = manifest.FieldRef{Pos: at(written), Field: written}
	}
	return fields
}

func (r Reporter) Duration(field string, v *Duration, min time.Duration) {
	if v == nil {
		return
	}
	d, err := manifest.ParseDuration(string(*v))
	switch {
	case err != nil:
		r.Errorf(field, "%v", err)
	case d != 0 && d < min:
		r.Errorf(field, "must be 0 or at least %s", min)
	}
}

// MountPath checks a mount target and that nothing else mounts there.
func (r Reporter) MountPath(field, p string, mounts map[string]string) {
	switch {
	case p == "":
		r.Required(field)
	case !path.IsAbs(p):
		r.Errorf(field, "must be an absolute path, got %q", p)
	default:
		clean := path.Clean(p)
		if prev, dup := mounts[clean]; dup {
			r.Errorf(field, "%q is already mounted by %s", p, prev)
			return
		}
		mounts[clean] = ParentPath(field)
	}
}
