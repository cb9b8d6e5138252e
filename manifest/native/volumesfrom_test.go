package native_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

const volumesFromDocs = `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: app}
spec: {image: shop/php:1}
---
apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: shop/nginx:1
  volumesFrom: [{service: app, readOnly: true}]
`

// spec.volumesFrom names services of the app; each starts first.
func TestLoadVolumesFrom(t *testing.T) {
	a, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": volumesFromDocs})
	if err != nil {
		t.Fatal(err)
	}
	web := a.Service("web").Spec
	if want := []manifest.VolumesFrom{{Service: "app", ReadOnly: true}}; !reflect.DeepEqual(web.VolumesFrom, want) {
		t.Errorf("volumesFrom %+v, want %+v", web.VolumesFrom, want)
	}
	if !slices.Equal(web.DependsOn, []string{"app"}) || web.DependsCondition("app") != manifest.DependsStarted {
		t.Errorf("dependsOn %v (%s), want app (started)", web.DependsOn, web.DependsCondition("app"))
	}
	for bad, want := range map[string]string{
		"service: db":  `a.yaml:11:27: spec.volumesFrom[0].service: service "db" is not declared`,
		"service: web": `a.yaml:11:27: spec.volumesFrom[0].service: a service cannot mount its own volumes`,
	} {
		_, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": strings.Replace(volumesFromDocs, "service: app", bad, 1)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", bad, err, want)
		}
	}
}
