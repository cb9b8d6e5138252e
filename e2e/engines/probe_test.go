package engines

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/dialclient"
	"github.com/driftless-dev/driftless/deploy/dockerssh"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/deploy/remoteprobe"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/sshengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestReadinessProbesOnRemoteEngine: a compose app on an ssh:// engine,
// whose dockerd runs in a network namespace of its own (the agent's host
// cannot reach its containers' addresses), declares an httpGet readiness
// probe and start-first updates. Its replica becomes ready through the probe container the agent keeps on that engine (driftless-probe,
// on the app's network; none on the local engine). A commit whose replica
// answers /healthz with 503 stops the rolling update: the old replica
// keeps running, ready, and the status carries the remote probe's words
// (GET http://IP:8080/healthz: 503 Service Unavailable: ...). A commit
// that moves the service to another network, with prune, removes the old
// network although the probe container was attached to it. It logs what
// one remote probe costs: engine requests (the agent's counters) and the
// latency of ten probes run like the agent's, over ssh.
func TestReadinessProbesOnRemoteEngine(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	// In a network namespace of its own: the agent's host cannot reach its
	// containers' addresses, as on another host.
	eng := privengine.StartIsolated(t, "far")
	eng.LoadImages(image)
	ssh := sshengine.Start(t, eng.Host)

	app := prefix() + "-probe"
	dir := "apps/" + app + "/"
	repo, url := platformRepo(t)
	compose := func(network string, env ...string) string {
		return fmt.Sprintf(`services:
  web:
    image: %s
    environment: [MESSAGE=probe%s]
    stop_grace_period: 1s
    deploy: {update_config: {order: start-first}}
    networks: [%s]
    x-driftless:
      readiness: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
networks:
  %[3]s: {}
`, image, strings.Join(append([]string{""}, env...), ", "), network)
	}
	repo.WriteFile(dir+"compose.yaml", compose("front"))
	first := repo.Commit("an app with an httpGet readiness probe on the ssh engine")
	cfg := fmt.Sprintf(`engines:
%sapps:
  - {name: %s, repo: %s, branch: main, path: apps/%[2]s, interval: 2s, allowInsecureTransport: true, prune: true, engine: far}
`, farEntry(ssh), app, url)
	path := writeConfig(t, cfg)
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path, "--ping-timeout", sshPingTimeout, "--ready-timeout", "40s")

	// Ready through the probe container.
	st := testenv.WaitAppStatus(t, agent, app, 2*time.Minute, "ready through the remote probe", testenv.ConvergedServices(first, map[string]int{"web": 1}))
	if c := st.Services[0].Containers[0]; !c.Ready || st.Services[0].Ready != 1 {
		t.Fatalf("replica %s ready %v (%q), service ready %d: want it ready", c.Name, c.Ready, c.ReadyReason, st.Services[0].Ready)
	}
	name := app + "-web-1"
	network, ip := replicaNetwork(t, eng, name)
	checkProbeContainer(t, eng, network)
	before, readyAt := testenv.ContainerIDs(st), time.Now()
	logProbeCost(t, agent, ssh, readiness.Target{ID: name, IP: ip, Network: network})

	// A version that never becomes ready: the rollout stops, v1 stays.
	repo.WriteFile(dir+"compose.yaml", compose("front", "WORKLOAD_NEVER_READY=1"))
	bad := repo.Commit("a version whose readiness endpoint answers 503")
	st = testenv.WaitAppStatus(t, agent, app, 2*time.Minute, "the rollout stopped on the remote probe's 503", func(st status.AppStatus) bool {
		return st.Fetched != nil && st.Fetched.SHA == bad && strings.Contains(st.Message, "rollout failed") && strings.Contains(st.Message, "GET http://") && readyReplica(st, before)
	})
	t.Logf("status after the bad commit: %s", st.Message)
	if !strings.Contains(st.Message, "readiness probe failed: GET http://") || !strings.Contains(st.Message, ":8080/healthz: 503 Service Unavailable: never ready (WORKLOAD_NEVER_READY)") {
		t.Errorf("status %q: want the remote probe's reason, readiness probe failed: GET http://IP:8080/healthz: 503 Service Unavailable: never ready (WORKLOAD_NEVER_READY)", st.Message)
	}
	if st.Applied == nil || st.Applied.SHA != first {
		t.Errorf("applied %+v after the rollout stopped, want still %s", st.Applied, first)
	}
	if started := st.Services[0].Containers[0].StartedAt; len(st.Services[0].Containers) != 1 || started.After(readyAt) {
		t.Errorf("after the stopped rollout, replicas %+v: want only the old one, not restarted (started before %s)", st.Services[0].Containers, readyAt)
	}

	// The service moves to another network: the old one, which the probe
	// container was attached to, is removed.
	repo.WriteFile(dir+"compose.yaml", compose("back"))
	third := repo.Commit("the service moves to the network back")
	testenv.WaitAppStatus(t, agent, app, 2*time.Minute, "converged on the network back", testenv.ConvergedServices(third, map[string]int{"web": 1}))
	waitNetworkGone(t, eng, app, network)
	newNet, _ := replicaNetwork(t, eng, name)
	if on := probeNetworks(t, eng); !slices.Contains(on, newNet) || slices.Contains(on, network) {
		t.Errorf("%s is on %v, want on %s and no longer on %s", remoteprobe.ContainerName, on, newNet, network)
	}
}

// checkProbeContainer: the probe container on the remote engine is on
// network and made as documented; the local engine has none.
func checkProbeContainer(t *testing.T, eng *privengine.Engine, network string) {
	t.Helper()
	if on := probeNetworks(t, eng); !slices.Contains(on, network) {
		t.Errorf("%s is on %v on the remote engine, want %s (the replica's network) among them", remoteprobe.ContainerName, on, network)
	}
	got := strings.TrimSpace(eng.Docker("inspect", "--format", "{{.HostConfig.RestartPolicy.Name}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.Memory}} {{index .Config.Labels \""+drift.LabelApp+"\"}}|{{.Config.Image}}", remoteprobe.ContainerName))
	if !strings.HasPrefix(got, "unless-stopped true 67108864 |driftless-probe:") {
		t.Errorf("%s: restart policy, read-only rootfs, memory, app label and image %q; want unless-stopped true 67108864, no app label, a driftless-probe image", remoteprobe.ContainerName, got)
	}
	if got := strings.TrimSpace(testenv.Docker(t, "ps", "-aq", "--filter", "name=^/?"+remoteprobe.ContainerName+"$")); got != "" {
		t.Errorf("the local engine has a %s container (%s): probes of a remote engine's apps must not make one here", remoteprobe.ContainerName, got)
	}
}

// logProbeCost logs what one remote probe costs: the agent's engine
// requests while only the probe loop runs, and the latency of ten probes
// run as the agent runs them, beside that of a ping over the same ssh.
func logProbeCost(t *testing.T, agent *testenv.Agent, ssh *sshengine.Server, target readiness.Target) {
	t.Helper()
	reqs := engineRequests(t, agent.URL, "far")
	// Ten periods: on a loaded machine one exec over ssh can take seconds.
	time.Sleep(10 * time.Second)
	after := engineRequests(t, agent.URL, "far")
	execs := after["POST /containers/{id}/exec"] - reqs["POST /containers/{id}/exec"]
	var execReqs float64
	for _, op := range []string{"POST /containers/{id}/exec", "POST /exec/{id}/start", "GET /exec/{id}/json"} {
		execReqs += after[op] - reqs[op]
	}
	if execs == 0 {
		t.Errorf("no exec in the probe container in 10 s of a 1 s probe period (requests: %s)", diffOps(reqs, after))
		return
	}
	t.Logf("remote probes over 10 s: %.0f, %.1f engine requests each (exec create, start+attach, inspect); all engine requests in the window: %s", execs, execReqs/execs, diffOps(reqs, after))
	probe, ping, err := probeLatency(t, ssh, target)
	if err != nil {
		// The agent's own probes made the replica ready; this is only a
		// measurement, which a loaded machine may not allow.
		t.Logf("probe latency not measured: %v", err)
		return
	}
	t.Logf("one remote probe over ssh, median of 10: %s (one ping over the same ssh: %s)", testenv.Ms(probe), testenv.Ms(ping))
}

// readyReplica reports whether one of the containers ids is in the status,
// running and ready.
func readyReplica(st status.AppStatus, ids []string) bool {
	for _, s := range st.Services {
		for _, c := range s.Containers {
			if slices.Contains(ids, c.ID) && c.Ready && c.State == string(drift.StateRunning) {
				return true
			}
		}
	}
	return false
}

// waitNetworkGone waits until the app's network is no longer on the
// engine.
func waitNetworkGone(t *testing.T, eng *privengine.Engine, app, network string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nets := strings.Fields(eng.Docker("network", "ls", "--format", "{{.Name}}", "--filter", "label="+drift.LabelApp+"="+app))
		if !slices.Contains(nets, network) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("network %s is still there after the service left it (networks of the app: %v; the probe container is on %v)", network, nets, probeNetworks(t, eng))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// replicaNetwork is the network and address of a container on the private
// engine (it has one network).
func replicaNetwork(t *testing.T, eng *privengine.Engine, name string) (network, ip string) {
	t.Helper()
	out := strings.Fields(eng.Docker("inspect", "--format", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{$v.IPAddress}} {{end}}", name))
	if len(out) != 2 {
		t.Fatalf("networks of %s: %q, want one with an address", name, out)
	}
	return out[0], out[1]
}

// probeNetworks are the networks the probe container is on.
func probeNetworks(t *testing.T, eng *privengine.Engine) []string {
	t.Helper()
	return strings.Fields(eng.Docker("inspect", "--format", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", remoteprobe.ContainerName))
}

// probeLatency runs ten probes of target through the probe container the
// agent made, over ssh as the agent does (a connection per change, reads
// over kept connections: the agent's deploy/dialclient), and returns their
// median, and that of ten pings over the same ssh.
func probeLatency(t *testing.T, ssh *sshengine.Server, target readiness.Target) (probe, ping time.Duration, err error) {
	t.Helper()
	d, err := dockerssh.New(ssh.URL, dockerssh.Options{KeyFile: ssh.KeyFile, KnownHostsFile: ssh.KnownHostsFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	cli, err := dialclient.New(d.DialContext, ssh.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return 0, 0, err
	}
	runner := remoteprobe.New(cli, nil)
	// The agent's binary: the same image, so the agent's container is used.
	runner.Executable = func() (string, error) { return testenv.DriftlessBinary(t), nil }
	r := manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Path: "/healthz", Port: 8080}}
	// A measurement, not the agent's probe: its bound is generous.
	const bound = 10 * time.Second
	if err := runner.Probe(ctx, target, r, bound); err != nil {
		return 0, 0, fmt.Errorf("a probe of %s through %s: %w", target.IP, remoteprobe.ContainerName, err)
	}
	var probes, pings []time.Duration
	for range 10 {
		start := time.Now()
		if err := runner.Probe(ctx, target, r, bound); err != nil {
			return 0, 0, fmt.Errorf("a probe of %s through %s: %w", target.IP, remoteprobe.ContainerName, err)
		}
		probes = append(probes, time.Since(start))
		start = time.Now()
		if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
			return 0, 0, err
		}
		pings = append(pings, time.Since(start))
	}
	return testenv.Median(probes), testenv.Median(pings), nil
}
