package compose

import (
	"reflect"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/native"
)

// rawXApp is the top-level x-driftless extension: what the repository says
// about the whole app.
type rawXApp struct {
	Release *native.RawRelease `json:"release"`
}

// mapRelease reads the top-level x-driftless.release (the last file that
// writes it wins, as compose merges top-level extensions).
func (m *composeMapper) mapRelease() *manifest.ReleaseSettings {
	var out *manifest.ReleaseSettings
	for _, src := range m.ix.sources("x-driftless") {
		if yamlpos.IsNull(src.node) {
			continue
		}
		yn := yamlpos.Resolved(src.node, 0)
		doc := &yamlpos.DocCtx{File: src.file.display, Start: manifest.Position{File: src.file.display, Line: yn.Line, Column: yn.Column},
			Pos: map[string]manifest.Position{}, Failed: map[string]bool{}}
		tmp := &yamlpos.Collector{}
		w := &yamlpos.Walker{Doc: doc, Errs: tmp}
		val, ok := w.Walk(yn, reflect.TypeOf(rawXApp{}), "x-driftless")
		x := &rawXApp{}
		if ok && !w.Bad {
			if err := yamlpos.DecodeStrict(m.in.InterpolateValues(val.(map[string]any)), x); err != nil {
				tmp.Add(doc.Start, "x-driftless", "%v", err)
			}
		}
		if x.Release != nil {
			out = native.CheckRelease(yamlpos.Reporter{Errs: tmp, Doc: doc}, "x-driftless.release", x.Release, doc.At("x-driftless.release"))
		}
		m.errs.Errs = append(m.errs.Errs, tmp.Errs...)
	}
	return out
}
