package compose_test

import (
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

func TestComposeNetworkSubnet(t *testing.T) {
	app := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n  web: {image: web:1, networks: [back]}\nnetworks:\n  back:\n    ipam:\n      config:\n        - subnet: 10.77.2.0/24\n"}, load.Options{})
	if got := app.Network("back").Spec.Subnet; got != "10.77.2.0/24" {
		t.Errorf("subnet = %q, want 10.77.2.0/24", got)
	}
}
