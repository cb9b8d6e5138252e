package manifest

import (
	"strings"
	"testing"
)

func portsApp() *App {
	return &App{Services: []Service{
		{Name: "web", Spec: ServiceSpec{Ports: []Port{{ContainerPort: 80, HostPort: 8080, HostIP: "127.0.0.1"}, {ContainerPort: 81, AnyHostPort: true}}}},
		{Name: "api", Spec: ServiceSpec{Ports: []Port{{ContainerPort: 9000, HostPort: 9000}, {ContainerPort: 9001}}}},
		{Name: "db", Spec: ServiceSpec{}},
	}}
}

func TestRemapHostPorts(t *testing.T) {
	app := portsApp()
	app.Rehash(nil)
	before := app.Services[2].Hash
	if err := RemapHostPorts(app, PortBlock{Base: 20000, Size: 10}); err != nil {
		t.Fatal(err)
	}
	// In order of service name: api first, then web.
	if p := app.Services[1].Spec.Ports[0]; p.HostPort != 20000 {
		t.Errorf("api port %+v, want host port 20000", p)
	}
	if p := app.Services[0].Spec.Ports[0]; p.HostPort != 20001 || p.HostIP != "127.0.0.1" {
		t.Errorf("web port %+v, want host port 20001 on 127.0.0.1", p)
	}
	if p := app.Services[0].Spec.Ports[1]; !p.AnyHostPort || p.HostPort != 0 {
		t.Errorf("a port Docker picks must stay so: %+v", p)
	}
	if app.Services[2].Hash != before {
		t.Error("a service without ports was rehashed")
	}
	if app.Services[0].Hash != HashService(nil, nil, app.Services[0].Spec) {
		t.Error("a remapped service keeps its old hash")
	}
}

func TestRemapHostPortsNone(t *testing.T) {
	app := portsApp()
	if err := RemapHostPorts(app, PortBlock{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range app.Services {
		for _, p := range s.Spec.Ports {
			if p.HostPort != 0 || p.HostIP != "" {
				t.Errorf("service %s still publishes %+v", s.Name, p)
			}
		}
	}
	if got := app.Services[0].Spec.Ports[0].ContainerPort; got != 80 {
		t.Errorf("the container port is lost: %d", got)
	}
}

func TestRemapHostPortsTooMany(t *testing.T) {
	err := RemapHostPorts(portsApp(), PortBlock{Base: 20000, Size: 1})
	if err == nil || !strings.Contains(err.Error(), "service web: the preview publishes more than the 1 host ports") {
		t.Fatalf("err = %v", err)
	}
}
