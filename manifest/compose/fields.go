package compose

import (
	"reflect"

	"github.com/driftless-dev/driftless/manifest/internal/composerules"
	"github.com/driftless-dev/driftless/manifest/internal/composeschema"
)

// refuseUnmapped refuses every attribute the service sets that the table
// marks refused (or does not know), and warns about the ones without
// effect.
func (sm *serviceMap) refuseUnmapped() {
	v := reflect.ValueOf(sm.s).Elem()
	for _, f := range composeschema.ServiceFields() {
		fv := v.FieldByIndex(f.Index)
		if fv.IsZero() {
			continue
		}
		switch r := composerules.Service[f.Name].(type) {
		case composerules.Mapped:
		case composerules.NoEffect:
			sm.warn(f.Name, "has no effect in driftless: %s", string(r))
		case composerules.Refused:
			sm.refuse(f.Name, "%s", string(r))
		default:
			sm.refuse(f.Name, "is not supported by driftless yet")
		}
	}
}
