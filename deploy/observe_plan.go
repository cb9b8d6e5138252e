package deploy

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/deploy/view"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// ObserveForPlan is the one-shot CLI's cold observation (diff, apply): it
// gives the plan for in.Desired exactly what ObserveCold with the foreign
// search gives it, at a cost that grows with the app and with what the
// plan would create, not with the host. in.Actual is ignored.
//
//   - The app's own containers, networks and volumes: one label-filtered
//     list each, and one inspect per owned container, as ObserveCold
//     does. The list summary does not carry what `docker update` changes
//     (limits, restart policy), network aliases, the start time that
//     readiness without a probe is judged by, or the restart count; the
//     differ and the health verdict read all of them.
//   - The containers of the app's docker compose project (one
//     label-filtered list): without adoption they hold their services
//     back even when nothing else would change.
//   - Every network (volume), one unfiltered list, only when the app
//     declares one it does not own yet (its name must be free, and compose
//     may keep its data) or an external one (it must exist).
//   - Containers holding the names of replicas the plan could create: one
//     name-filtered list, only when a slot has no replica.
//   - Containers publishing the app's host ports: one publish-filtered
//     list, only when the plan does something (a held service is held at
//     its first change; with nothing to change, no port is ever taken).
//
// Foreign containers that hold neither a needed name nor a needed port are
// left out, and so are image digests: no decision of the CLI reads them.
//
// With an inspect memo (UseInspectMemo), a running container that no
// engine event has named since the memo's observation is not inspected
// again: one read of the engine's event buffer stands in for the inspects.
func (e *Engine) ObserveForPlan(ctx context.Context, in drift.Input) (drift.Actual, error) {
	app := in.App
	// The reads that do not depend on each other go at once: the memo's
	// events, the app's own lists and its compose project's containers.
	f := foreignFinder{e: e, app: app}
	var wg sync.WaitGroup
	if e.memo != nil && e.memo.app == app {
		wg.Go(func() { e.checkMemo(ctx) })
	}
	wg.Go(func() { f.byLabel(ctx, drift.LabelComposeProject+"="+in.Options.ComposeProjectOf(app)) })
	actual, ips, err := e.observeOwn(ctx, app)
	wg.Wait()
	if err != nil {
		return drift.Actual{}, engineErr(fmt.Errorf("observe app %s: %w", app, err))
	}
	desired := in.Desired
	if desired == nil {
		desired = &manifest.App{Name: app}
	}
	if needsAllNetworks(desired, actual.Networks) {
		f.networks(ctx, &actual)
	}
	// A replica slot's anonymous volume the plan would create may have
	// its name taken, too.
	if needsAllVolumes(desired, actual.Volumes) || missingAnonymousVolume(app, desired, actual.Volumes) {
		f.volumes(ctx, &actual)
	}
	f.byName(ctx, creatableNames(app, desired, actual.Containers))
	if f.err != nil {
		return drift.Actual{}, engineErr(fmt.Errorf("observe app %s: %w", app, f.err))
	}
	e.fillReadiness(ctx, actual.Containers, ips, func(c *readiness.Info) bool { return c.App == app })
	actual.ForeignContainers = f.found
	view.SortForeign(&actual)

	if ports := hostPorts(desired); len(ports) > 0 {
		probe := in
		probe.Actual = actual
		if in.Options.Adopt {
			probe.Desired = drift.AdoptComposeVolumes(desired, actual, app)
		}
		if plan := drift.Compute(probe); len(plan.Changes)+len(plan.Deferred)+len(plan.Conflicts) > 0 {
			f.byPort(ctx, ports)
			if f.err != nil {
				return drift.Actual{}, engineErr(fmt.Errorf("observe app %s: %w", app, f.err))
			}
			actual.ForeignContainers = f.found
			view.SortForeign(&actual)
		}
	}
	return actual, nil
}

// observeOwn lists the app's own objects, label-filtered.
func (e *Engine) observeOwn(ctx context.Context, app string) (drift.Actual, map[string]string, error) {
	l, err := e.list(ctx, make(client.Filters).Add("label", drift.LabelApp+"="+app))
	if err != nil {
		return drift.Actual{}, nil, err
	}
	return l.ByApp()[app], l.IPs(), nil
}

// foreignFinder collects, once each, the containers of others that a
// lookup found; the first error ends the lookups.
type foreignFinder struct {
	e     *Engine
	app   string
	found []drift.Container
	seen  map[string]bool
	err   error
}

// containers adds the listed containers that are not the app's and that
// keep says are wanted (nil: all).
func (f *foreignFinder) containers(ctx context.Context, filters client.Filters, keep func(drift.Container) bool) {
	if f.err != nil {
		return
	}
	res, err := f.e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		f.err = fmt.Errorf("list containers: %w", err)
		return
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	for _, s := range res.Items {
		c := dockerspec.ContainerFromSummary(s)
		if c.App == f.app || f.seen[c.ID] || (keep != nil && !keep(c)) {
			continue
		}
		f.seen[c.ID] = true
		f.found = append(f.found, c)
	}
}

func (f *foreignFinder) byLabel(ctx context.Context, label string) {
	f.containers(ctx, make(client.Filters).Add("label", label), nil)
}

// byName finds the containers called one of names. Docker matches a name
// filter as a regular expression, compiled for every container on the
// host, so the names go in one anchored alternation; past maxNameFilter
// names one unfiltered list is cheaper, and the names are picked here.
func (f *foreignFinder) byName(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	if len(names) > maxNameFilter {
		want := make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
		f.containers(ctx, nil, func(c drift.Container) bool { return want[c.Name] })
		return
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	re := "^/?(?:" + strings.Join(quoted, "|") + ")$"
	f.containers(ctx, make(client.Filters).Add("name", re), func(c drift.Container) bool { return slices.Contains(names, c.Name) })
}

// maxNameFilter is how many names one name-filtered list asks for.
const maxNameFilter = 64

// byPort finds the containers publishing one of the host ports, under
// any protocol: the differ counts a port as taken whatever its protocol.
func (f *foreignFinder) byPort(ctx context.Context, ports []int) {
	filters := make(client.Filters)
	for _, p := range ports {
		for _, proto := range []string{"tcp", "udp", "sctp"} {
			filters.Add("publish", strconv.Itoa(p)+"/"+proto)
		}
	}
	f.containers(ctx, filters, nil)
}

func (f *foreignFinder) networks(ctx context.Context, a *drift.Actual) {
	if f.err != nil {
		return
	}
	res, err := f.e.api.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		f.err = fmt.Errorf("list networks: %w", err)
		return
	}
	for _, s := range res.Items {
		if n := dockerspec.NetworkFromSummary(s); n.App != f.app {
			a.ForeignNetworks = append(a.ForeignNetworks, n)
		}
	}
}

func (f *foreignFinder) volumes(ctx context.Context, a *drift.Actual) {
	if f.err != nil {
		return
	}
	res, err := f.e.api.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		f.err = fmt.Errorf("list volumes: %w", err)
		return
	}
	for _, v := range res.Items {
		if vol := dockerspec.VolumeFromSummary(v); vol.App != f.app {
			a.ForeignVolumes = append(a.ForeignVolumes, vol)
		}
	}
}

// needsAllNetworks reports whether the plan could read a network the app
// does not own: an external one, or one it would create. Ownership is
// judged by the resource label alone, which never calls a network owned
// that the differ would not.
func needsAllNetworks(desired *manifest.App, owned []drift.Network) bool {
	for _, d := range desired.Networks {
		name := d.DockerName(desired.Name)
		if d.Spec.External || !slices.ContainsFunc(owned, func(n drift.Network) bool { return n.Resource == d.Name && n.Name == name }) {
			return true
		}
	}
	return false
}

// needsAllVolumes is needsAllNetworks for volumes; a volume the app would
// create may also be one its compose project keeps (AdoptComposeVolumes).
func needsAllVolumes(desired *manifest.App, owned []drift.Volume) bool {
	for _, d := range desired.Volumes {
		name := d.DockerName(desired.Name)
		if d.Spec.External || !slices.ContainsFunc(owned, func(v drift.Volume) bool { return v.Resource == d.Name && v.Name == name }) {
			return true
		}
	}
	return false
}

// creatableNames are the names of the replicas the plan could create: the
// slots 1..replicas of each service that no owned container of that
// service holds.
func creatableNames(app string, desired *manifest.App, owned []drift.Container) []string {
	type slotOf struct {
		service string
		slot    int
	}
	held := make(map[slotOf]bool, len(owned))
	for _, c := range owned {
		held[slotOf{c.Service, c.Slot}] = true
	}
	var names []string
	for _, svc := range desired.Services {
		for slot := 1; slot <= svc.Spec.Replicas; slot++ {
			if !held[slotOf{svc.Name, slot}] {
				names = append(names, manifest.ContainerName(app, svc.Name, slot))
			}
		}
	}
	return names
}

// hostPorts are the host ports the app's services publish, sorted.
func hostPorts(desired *manifest.App) []int {
	var ports []int
	for _, svc := range desired.Services {
		for _, p := range svc.Spec.Ports {
			if p.HostPort != 0 && !slices.Contains(ports, p.HostPort) {
				ports = append(ports, p.HostPort)
			}
		}
	}
	slices.Sort(ports)
	return ports
}
