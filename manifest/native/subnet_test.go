package native_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

// A declared subnet is part of the network's spec (changing it replaces
// the network); an undeclared one is left to the agent's address pool.
func TestNetworkSubnet(t *testing.T) {
	const svc = "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec: {image: web:1, networks: [back]}\n"
	load := func(spec string) (*manifest.App, error) {
		return loadtest.LoadFiles(t, map[string]string{"web.yaml": svc, "net.yaml": "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: back}\nspec: " + spec + "\n"})
	}
	plain, err := load("{}")
	if err != nil {
		t.Fatal(err)
	}
	declared, err := load("{subnet: 10.77.1.0/24}")
	if err != nil {
		t.Fatal(err)
	}
	if got := declared.Network("back").Spec.Subnet; got != "10.77.1.0/24" {
		t.Errorf("subnet = %q", got)
	}
	if plain.Network("back").Hash == declared.Network("back").Hash {
		t.Error("a declared subnet does not change the network's hash")
	}
	for spec, want := range map[string]string{
		"{subnet: 10.77.1.1/24}":                 "net.yaml:4:16: spec.subnet: subnet 10.77.1.1/24 has host bits set; did you mean 10.77.1.0/24?",
		"{subnet: fd00::/64}":                    `net.yaml:4:16: spec.subnet: subnet "fd00::/64" must be an IPv4 CIDR such as 10.20.0.0/24`,
		"{subnet: 10.77.1.0/31}":                 "net.yaml:4:16: spec.subnet: subnet 10.77.1.0/31 is too small for a gateway and a container: use /30 or larger",
		"{external: true, subnet: 10.77.1.0/24}": "subnet",
	} {
		_, err := load(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", spec, err, want)
		}
	}
}
