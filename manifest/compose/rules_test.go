package compose

import (
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/composerules"
	"github.com/driftless-dev/driftless/manifest/internal/composeschema"
)

// Every build attribute compose-go knows is mapped or refused on purpose.
func TestComposeBuildRulesComplete(t *testing.T) {
	for _, name := range composeBuildFields() {
		if _, ok := composerules.Build[name]; !ok {
			t.Errorf("build.%s is not in composerules.Build", name)
		}
	}
}

// Every attribute of compose-go's ServiceConfig is mapped, accepted
// without effect, or refused. When compose-go grows an attribute, this
// fails until the table says what driftless does with it.
func TestComposeEveryServiceFieldIsHandled(t *testing.T) {
	fields := composeschema.ServiceFields()
	if len(fields) < 90 {
		t.Fatalf("only %d fields found: the reflection walk is broken", len(fields))
	}
	seen := map[string]bool{}
	for _, f := range fields {
		seen[f.Name] = true
		if _, ok := composerules.Service[f.Name]; !ok {
			t.Errorf("compose attribute %q (types.ServiceConfig, Go type %s) is neither mapped nor refused: add it to composerules.Service", f.Name, f.Type)
		}
	}
	for name := range composerules.Service {
		if !seen[name] {
			t.Errorf("composerules.Service lists %q, which types.ServiceConfig no longer has", name)
		}
	}
}
