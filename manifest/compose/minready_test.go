package compose_test

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// deploy.update_config.monitor, Swarm's watch for a failure after each
// update, is how long a replica must run without restarting to count as
// ready; the same on a first deploy, so the meaning does not depend on
// whether something is replaced.
func TestComposeUpdateMonitorIsMinReady(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web("deploy: {update_config: {monitor: 15s}}"), load.Options{})
	if got := a.Service("web").Spec.MinReady; got == nil || *got != 15*time.Second {
		t.Errorf("minReady = %v; want 15s", got)
	}
	if got := loadtest.MustLoadCompose(t, loadtest.Web(), load.Options{}).Service("web").Spec.MinReady; got != nil {
		t.Errorf("without monitor, minReady = %v; want unset (the engine's settle time)", *got)
	}
	errs := strings.Join(loadtest.ComposeErrors(t, loadtest.Web("deploy: {update_config: {monitor: 48h}}"), load.Options{}), "\n")
	if !strings.Contains(errs, "services.web.deploy.update_config.monitor: must be between 0s and 86400s") {
		t.Errorf("errors: %s", errs)
	}
}

// x-driftless.minReadySeconds says what monitor cannot: 0, ready once
// running; it wins over monitor.
func TestComposeXDriftlessMinReadySeconds(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web("deploy: {update_config: {monitor: 15s}}", "x-driftless: {minReadySeconds: 0}"), load.Options{})
	if got := a.Service("web").Spec.MinReady; got == nil || *got != 0 {
		t.Errorf("minReady = %v; want 0", got)
	}
	errs := strings.Join(loadtest.ComposeErrors(t, loadtest.Web("x-driftless: {minReadySeconds: -1}"), load.Options{}), "\n")
	if !strings.Contains(errs, "services.web.x-driftless.minReadySeconds: must be between 0 and 86400") {
		t.Errorf("errors: %s", errs)
	}
}
