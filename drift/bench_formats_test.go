package drift

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
)

// A no-op pass costs the same for a compose app as for a native one: both
// front ends produce the same model, parsed once per commit, and the pass
// computes over that model. These benchmarks compute the plan of the same
// 50-service app, converged, from each format.

func fiftyServices(b *testing.B, compose bool) *manifest.App {
	b.Helper()
	var sb strings.Builder
	files := fstest.MapFS{}
	if compose {
		sb.WriteString("services:\n")
		for i := range 50 {
			fmt.Fprintf(&sb, "  svc%d:\n    image: shop/svc%d:1\n    deploy: {replicas: 2}\n    environment: {ID: \"%d\"}\n", i, i, i)
		}
		files["compose.yaml"] = &fstest.MapFile{Data: []byte(sb.String())}
	} else {
		for i := range 50 {
			fmt.Fprintf(&sb, "---\napiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: svc%d}\nspec: {image: shop/svc%d:1, replicas: 2, env: {ID: \"%d\"}}\n", i, i, i)
		}
		files["app.yaml"] = &fstest.MapFile{Data: []byte(sb.String())}
	}
	app, err := appdir.Load(files, ".", testApp)
	if err != nil {
		b.Fatal(err)
	}
	return app
}

func benchmarkNoopPass(b *testing.B, compose bool) {
	app := fiftyServices(b, compose)
	in := input(app, converged(app), Options{})
	b.ReportAllocs()
	for b.Loop() {
		if plan := Compute(in); !plan.Empty() {
			b.Fatalf("not a no-op: %s", plan.Summary())
		}
	}
}

func BenchmarkNoopPassNative50(b *testing.B)  { benchmarkNoopPass(b, false) }
func BenchmarkNoopPassCompose50(b *testing.B) { benchmarkNoopPass(b, true) }
