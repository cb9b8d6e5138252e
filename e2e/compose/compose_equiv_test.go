package compose

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeEquivalence runs compose files with docker-compose 1.29
// (`up -d`) and with `driftless apply`, one after the other (they publish
// the same host ports), and compares the containers, networks and
// volumes `docker inspect` shows, setting by setting: Config, HostConfig,
// the mounts with the content seen at each bind target, the networks
// joined with their aliases, the published ports.
//
// Each case of equivCases is one file (testdata/compose/<dir>); the cases
// run in parallel. A difference fails the test unless it is one of
// equivDifferences, each with its reason; one of those that occurs in no
// case fails it too, so the list stays true. Differences in how the same
// thing is written to Docker (Binds or Mounts, null or [], "CAP_"
// prefixes) are normalized first, each normalization listed in
// canonicalContainer.
func TestComposeEquivalence(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Fatal("this test compares with docker-compose 1.29: install Debian's docker-compose (.ci/run does)")
	}
	image := builtImage(t, "shop/equiv:1")
	var mu sync.Mutex
	used := map[string]int{}
	ran := 0
	cases := equivCases()
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.dir, func(t *testing.T) {
				t.Parallel()
				u := runEquivCase(t, c, image)
				mu.Lock()
				defer mu.Unlock()
				ran++
				for k, n := range u {
					used[k] += n
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	if ran < len(cases) {
		t.Logf("%d of %d cases ran (-run): whether each by-design difference still occurs is checked only when all do", ran, len(cases))
		return
	}
	for _, e := range equivDifferences {
		if used[e.name] == 0 {
			t.Errorf("the by-design difference %q no longer occurs: remove it from equivDifferences (%s)", e.name, e.reason)
		}
	}
}

// equivCase is one compose file run by both tools.
type equivCase struct {
	dir                         string // under testdata/compose
	services, networks, volumes []string
	// declared are settings the file declares, by object ("container
	// web"): both sides must have them, so that two tools ignoring the
	// same setting cannot pass as equal.
	declared map[string][]string
	// healthy is a service whose healthcheck compose's side waits for.
	healthy string
	// env adds variables (free ports, ...) to both tools' environment.
	env func(t *testing.T) map[string]string
	// ipam are the networks whose IPAM configuration (subnets, gateways,
	// ranges) the file declares and both sides compare; the others'
	// subnets come from each tool's own pool.
	ipam []string
	// allow is driftless apply's --allow.
	allow string
	// args, when set, are more flags of driftless apply, from the
	// environment both tools ran with.
	args func(env map[string]string) []string
}

func equivCases() []equivCase {
	return slices.Concat(firstEquivCases(), roundTwoEquivCases())
}

func firstEquivCases() []equivCase {
	return []equivCase{{
		dir:      "equiv",
		services: []string{"web", "worker", "cache"},
		networks: []string{"back", "private", "default"},
		volumes:  []string{"data"},
		declared: equivDeclared,
		healthy:  "web",
		allow:    "capabilities",
		env: func(t *testing.T) map[string]string {
			rng := testenv.FreePorts(t, 2)
			return map[string]string{
				"EQUIV_HTTP_PORT":      strconv.Itoa(testenv.FreePorts(t, 1)),
				"EQUIV_UDP_PORT":       strconv.Itoa(testenv.FreePorts(t, 1)),
				"EQUIV_CACHE_PORT":     strconv.Itoa(testenv.FreePorts(t, 1)),
				"EQUIV_RANGE_PORT":     strconv.Itoa(rng),
				"EQUIV_RANGE_PORT_END": strconv.Itoa(rng + 1),
			}
		},
	}}
}

// runEquivCase runs one case and returns how often each by-design
// difference occurred.
func runEquivCase(t *testing.T, c equivCase, image string) map[string]int {
	app := testenv.UniqueApp(t)
	project := "c" + app
	dir := filepath.Join(t.TempDir(), app) // the CLI's app name is the directory's
	src := loadComposeApp(t, app, filepath.Join("testdata", "compose", c.dir))
	src.Write(dir)
	env := map[string]string{
		"EQUIV_IMAGE":    image,
		"DRIFTLESS_DATA": testenv.DataDir(t),
	}
	if c.env != nil {
		maps.Copy(env, c.env(t))
	}

	// docker-compose first.
	compose := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("docker-compose", append([]string{"--project-name", project, "--project-directory", dir, "--file", filepath.Join(dir, "compose.yaml")}, args...)...)
		cmd.Env = testenv.ComposeCLIEnv(testenv.CleanEnv(env))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	downDone := false
	t.Cleanup(func() {
		// Nothing left when the test got past its own `down`; this is for
		// a failure before. After it, a `down` would reach for the
		// networks and volumes the file names (name:), which are
		// driftless's by then.
		if downDone {
			return
		}
		testenv.RemoveComposeContainers(t, project)
		cmd := exec.Command("docker-compose", "--project-name", project, "--project-directory", dir, "--file", filepath.Join(dir, "compose.yaml"), "down", "--volumes", "--remove-orphans")
		cmd.Env = testenv.ComposeCLIEnv(testenv.CleanEnv(env))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("docker-compose down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	compose("--compatibility", "up", "--detach")
	if c.healthy != "" {
		// Seconds on a quiet machine; the bound is for a loaded CI
		// machine, where exec healthchecks queue behind everything else.
		testenv.WaitInspect(t, project+"_"+c.healthy+"_1", "{{.State.Health.Status}}", "healthy", 3*time.Minute)
	}
	composeSide := observeSide(t, "compose", project+"_", "_1", c)
	testenv.RemoveComposeContainers(t, project)
	compose("down", "--volumes")
	removeCreatedSources(t, dir, src.Files)
	downDone = true
	t.Logf("docker-compose up, observe, down: %s", time.Since(start).Round(100*time.Millisecond))

	// Then driftless, on the same file.
	start = time.Now()
	// --ready-timeout: the default minute is for a user's machine; a
	// loaded CI machine queues the probes.
	args := []string{"apply", app, "--ready-timeout", "3m"}
	if c.allow != "" {
		args = append(args, "--allow", c.allow)
	}
	if c.args != nil {
		args = append(args, c.args(env)...)
	}
	out, code := testenv.RunDriftless(t, t.Context(), filepath.Dir(dir), env, args...)
	if code != 0 {
		t.Fatalf("driftless apply: exit %d\n%s", code, out)
	}
	driftSide := observeSide(t, "driftless", app+"-", "-1", c)
	t.Logf("driftless apply, observe: %s", time.Since(start).Round(100*time.Millisecond))

	return compareSides(t, composeSide, driftSide, c.declared)
}

// equivDifference is a difference between what docker-compose and
// driftless create from the same file that is by design.
type equivDifference struct {
	name, reason string
	match        func(object, path, compose, driftless string) bool
}

// equivDifferences are every difference by design. Names and labels are
// not here: the canonical forms name objects by their compose names and
// drop each tool's own labels (see canonicalContainer).
var equivDifferences = []equivDifference{{
	name: "restart: always",
	reason: "docs/manifests.md: compose's `always` maps to driftless's `always`, which driftless runs as Docker's " +
		"unless-stopped: a container stopped by hand is healed by driftless, not restarted by Docker",
	match: func(_, path, c, d string) bool {
		return path == "HostConfig.RestartPolicy.Name" && c == "always" && d == "unless-stopped"
	},
}, {
	name: "stop grace period spelled out",
	reason: "driftless always sets the stop grace period (10 s, compose's default, docs/manifests.md \"Defaults\"); " +
		"docker-compose 1.29 sets Config.StopTimeout only when the file has stop_grace_period. Docker's own default is the same 10 s, " +
		"so `docker stop` behaves the same",
	match: func(_, path, c, d string) bool {
		return path == "Config.StopTimeout" && c == "" && d == "10"
	},
}, {
	name: "extra_hosts sorted",
	reason: "docs/manifests.md (\"What replaces a container\"): extraHosts are a set, written sorted, so reordering them is not a change; " +
		"compose writes them in file order. /etc/hosts holds the same lines",
	match: func(_, path, c, d string) bool {
		if path != "HostConfig.ExtraHosts" {
			return false
		}
		var cs, ds []string
		if json.Unmarshal([]byte(c), &cs) != nil || json.Unmarshal([]byte(d), &ds) != nil {
			return false
		}
		slices.Sort(cs)
		return slices.Equal(cs, ds)
	},
}, {
	name: "networks attachable",
	reason: "docker-compose 1.29 creates every network with Attachable: true (so that `docker-compose run` containers can join " +
		"it); docker compose v2 and driftless only when the file says `attachable: true` (docs/manifests.md, Network)",
	match: func(object, path, c, d string) bool {
		return strings.HasPrefix(object, "network ") && path == "Attachable" && c == "true" && d == "false"
	},
}}

// side is what one tool created, in canonical form by compose names.
type side struct {
	tool    string
	objects map[string]map[string]string // "container web" -> flattened canonical settings
}

// observeSide inspects the containers, networks and volumes one tool
// made for the file. Docker names are prefix+name(+suffix for
// containers); a network or volume listed as "/NAME" is the one the file
// names NAME (name:), on both sides.
func observeSide(t *testing.T, tool, prefix, suffix string, c equivCase) side {
	services, networks, volumes := c.services, c.networks, c.volumes
	t.Helper()
	s := side{tool: tool, objects: map[string]map[string]string{}}
	logical := func(docker string) string { return strings.TrimPrefix(docker, prefix) }
	dockerName := func(n string) string {
		if given, ok := strings.CutPrefix(n, "/"); ok {
			return given
		}
		return prefix + n
	}
	for _, svc := range services {
		c := testenv.Inspect(t, "container", prefix+svc+suffix)
		s.objects["container "+svc] = flatten(canonicalContainer(t, c, logical))
	}
	for _, n := range networks {
		v := testenv.Inspect(t, "network", dockerName(n))
		obj := map[string]any{
			"Driver": v["Driver"], "Internal": v["Internal"], "Attachable": v["Attachable"], "EnableIPv6": v["EnableIPv6"],
			"Options": v["Options"], "Labels": userLabels(v["Labels"]), "IPAM.Driver": testenv.Field(v, "IPAM.Driver"), "Scope": v["Scope"],
		}
		if slices.Contains(c.ipam, n) {
			obj["IPAM.Config"] = testenv.Field(v, "IPAM.Config")
		}
		s.objects["network "+n] = flatten(obj)
	}
	for _, vol := range volumes {
		v := testenv.Inspect(t, "volume", dockerName(vol))
		s.objects["volume "+vol] = flatten(map[string]any{
			"Driver": v["Driver"], "Options": v["Options"], "Labels": userLabels(v["Labels"]), "Scope": v["Scope"],
		})
	}
	return s
}

// userLabels drops the labels each tool adds for itself
// (com.docker.compose.*, dev.driftless.*): by design, each tool finds its
// objects by its own labels.
func userLabels(v any) map[string]any {
	out := map[string]any{}
	m, _ := v.(map[string]any)
	for k, val := range m {
		if !strings.HasPrefix(k, "com.docker.compose.") && !strings.HasPrefix(k, "dev.driftless.") {
			out[k] = val
		}
	}
	return out
}

// canonicalContainer is what a container is, independent of how a tool
// asked Docker for it:
//   - by design, objects are named by their compose names (compose:
//     <project>_<name>, driftless: <app>-<name>), each tool's own labels
//     are dropped, and a bind of a repository file is its content (compose
//     mounts the project directory, driftless a content-addressed
//     read-only copy under its data directory, docs/manifests.md);
//   - representation: HostConfig.Binds, .Mounts and .Tmpfs are one list of
//     mounts by target (compose 1.29 uses the Binds form, driftless the
//     Mounts API; a named volume then shows Mode "rw" or "z", the
//     options string of the form used, which is not compared);
//     an anonymous volume's name is "<anonymous>" (compose's are 64 random
//     hex digits, driftless's are named after the replica slot and target:
//     anonymousVolumeName);
//     capabilities without the "CAP_" prefix, sorted; the environment
//     sorted; the container's own ID (its default hostname, its alias) as
//     "<id>"; in another container's network namespace, the owner's ID
//     (the host name Docker gives) as "<owner's id>", and the owner in
//     NetworkMode by its service.
func canonicalContainer(t *testing.T, c map[string]any, logical func(string) string) map[string]any {
	t.Helper()
	id := c["Id"].(string)[:12]
	name := strings.TrimPrefix(c["Name"].(string), "/")
	cfg := maps.Clone(c["Config"].(map[string]any))
	host := maps.Clone(c["HostConfig"].(map[string]any))

	if cfg["Hostname"] == id {
		cfg["Hostname"] = "<id>"
	}
	cfg["Labels"] = userLabels(cfg["Labels"])
	cfg["ExposedPorts"] = slices.Sorted(maps.Keys(asMap(cfg["ExposedPorts"]))) // a set: {"80/tcp": {}}
	if env, ok := cfg["Env"].([]any); ok {
		env = slices.Clone(env)
		slices.SortFunc(env, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		cfg["Env"] = env
	}
	for _, k := range []string{"CapAdd", "CapDrop"} {
		if caps, ok := host[k].([]any); ok {
			var out []any
			for _, c := range caps {
				out = append(out, strings.TrimPrefix(c.(string), "CAP_"))
			}
			slices.SortFunc(out, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
			host[k] = out
		}
	}
	host["NetworkMode"] = logical(fmt.Sprint(host["NetworkMode"]))
	sharedNamespace(t, cfg, host)

	// Mounts by target.
	mounts := map[string]any{}
	for _, m := range c["Mounts"].([]any) {
		mm := m.(map[string]any)
		target := mm["Destination"].(string)
		switch mm["Type"] {
		case "volume":
			mounts[target] = map[string]any{"Type": "volume", "Volume": volumeName(t, mm["Name"].(string), logical), "Driver": mm["Driver"], "RW": mm["RW"],
				"SELinux": selinuxLabel(mm["Mode"], "z")}
		case "bind":
			mounts[target] = map[string]any{"Type": "bind", "RW": mm["RW"], "Propagation": mm["Propagation"], "Content": contentDigest(t, name, target),
				"SELinux": selinuxLabel(mm["Mode"], "")}
		case "tmpfs":
			// from HostConfig below, with its options
		default:
			mounts[target] = mm
		}
	}
	for target, opts := range asMap(host["Tmpfs"]) {
		mounts[target] = map[string]any{"Type": "tmpfs", "Options": tmpfsOptions(t, opts.(string))}
	}
	for _, m := range asList(host["Mounts"]) {
		mm := m.(map[string]any)
		if mm["Type"] == "tmpfs" {
			o := asMap(mm["TmpfsOptions"])
			opts := map[string]any{}
			if size, ok := o["SizeBytes"].(float64); ok {
				opts["size"] = strconv.FormatInt(int64(size), 10)
			}
			if mode, ok := o["Mode"].(float64); ok {
				opts["mode"] = strconv.FormatInt(int64(mode), 8)
			}
			mounts[mm["Target"].(string)] = map[string]any{"Type": "tmpfs", "Options": opts}
		}
	}
	delete(host, "Binds")
	delete(host, "Mounts")
	delete(host, "Tmpfs")

	nets := map[string]any{}
	for n, ep := range testenv.Field(c, "NetworkSettings.Networks").(map[string]any) {
		var aliases []string
		for _, a := range asList(testenv.Field(ep, "Aliases")) {
			if a != id {
				aliases = append(aliases, a.(string))
			}
		}
		slices.Sort(aliases)
		nets[logical(n)] = map[string]any{"Aliases": aliases, "Links": canonicalLinks(testenv.Field(ep, "Links"), logical), "IPAMConfig": testenv.Field(ep, "IPAMConfig")}
	}
	return map[string]any{
		"Config": cfg, "HostConfig": host, "Path": c["Path"], "Args": c["Args"], "Image": c["Image"],
		"Mounts": mounts, "Networks": nets, "Published": publishedPorts(c),
	}
}

// publishedPorts are the ports Docker published, with the host port that
// Docker picked (where the binding asked for none) shown as "<any>".
func publishedPorts(c map[string]any) any {
	picked := map[string]bool{}
	for port, bindings := range asMap(testenv.Field(c, "HostConfig.PortBindings")) {
		for _, b := range asList(bindings) {
			if asMap(b)["HostPort"] == "" {
				picked[port] = true
			}
		}
	}
	out := map[string]any{}
	for port, bindings := range asMap(testenv.Field(c, "NetworkSettings.Ports")) {
		if !picked[port] {
			out[port] = bindings
			continue
		}
		var bs []any
		for _, b := range asList(bindings) {
			b := maps.Clone(asMap(b))
			b["HostPort"] = "<any>"
			bs = append(bs, b)
		}
		out[port] = bs
	}
	return out
}

// sharedNamespace canonicalizes a container in another's network
// namespace: Docker gives it the owner's ID as host name, and both tools
// name the owner by its ID in NetworkMode; the owner is compared by its
// service, from each tool's label.
func sharedNamespace(t *testing.T, cfg, host map[string]any) {
	t.Helper()
	owner, ok := strings.CutPrefix(fmt.Sprint(host["NetworkMode"]), "container:")
	if !ok {
		return
	}
	if h, _ := cfg["Hostname"].(string); h != "" && strings.HasPrefix(owner, h) {
		cfg["Hostname"] = "<owner's id>"
	}
	labels := asMap(testenv.Field(testenv.Inspect(t, "container", owner), "Config.Labels"))
	svc, _ := labels["com.docker.compose.service"].(string)
	if d, ok := labels["dev.driftless.service"].(string); ok {
		svc = d
	}
	host["NetworkMode"] = "container:" + svc
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// tmpfsOptions reads HostConfig.Tmpfs options ("size=16m,mode=1777") into
// the form of the Mounts API (size in bytes, mode in octal).
func tmpfsOptions(t *testing.T, s string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for opt := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "size":
			n, err := parseBytes(v)
			if err != nil {
				t.Fatalf("tmpfs size %q: %v", v, err)
			}
			out["size"] = strconv.FormatInt(n, 10)
		case "mode":
			m, err := strconv.ParseInt(v, 8, 64)
			if err != nil {
				t.Fatalf("tmpfs mode %q: %v", v, err)
			}
			out["mode"] = strconv.FormatInt(m, 8)
		default:
			if !strings.Contains(opt, "=") {
				v = "set" // a flag: exec, nosuid, ...
			}
			out[k] = v
		}
	}
	return out
}

// selinuxLabel is the SELinux relabelling a mount's Mode asks for ("z" or
// "Z" among its options), whichever form made it; def is what Docker
// does without one (named volumes are labelled z by default).
func selinuxLabel(mode any, def string) string {
	for o := range strings.SplitSeq(fmt.Sprint(mode), ",") {
		if o == "z" || o == "Z" {
			return o
		}
	}
	return def
}

// canonicalLinks are an endpoint's legacy links as "service:alias": each
// tool names the linked container its own way, and compose 1.29 adds the
// container's own names as aliases, which resolve on the network anyway.
func canonicalLinks(v any, logical func(string) string) []string {
	var out []string
	for _, l := range asList(v) {
		ctr, alias, _ := strings.Cut(l.(string), ":")
		ctr = strings.TrimPrefix(ctr, "/")
		own := logical(ctr)
		if alias == ctr || alias == own {
			continue
		}
		svc := strings.TrimRight(own, "0123456789")
		out = append(out, strings.TrimRight(svc, "_-")+":"+alias)
	}
	slices.Sort(out)
	return out
}

// parseBytes reads Docker's sizes: a number with an optional b, k, m or g
// (powers of 1024).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	case "b":
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	return n * mult, err
}

// contentDigest is what a container sees at a bind target: every file
// under it by relative name, hashed.
func contentDigest(t *testing.T, container, target string) string {
	t.Helper()
	files := testenv.ContainerFiles(t, container, target)
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%s\x00", name, files[name])
	}
	return fmt.Sprintf("%d file(s) sha256:%s", len(files), hex.EncodeToString(h.Sum(nil))[:16])
}

// flatten turns nested JSON into path -> compact JSON value. Maps recurse;
// lists and scalars are values. Empty values (null, "", [], {}) are left
// out: Docker reports an unset setting as any of them, depending on how it
// was asked.
func flatten(v map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case nil:
		case map[string]any:
			for k, val := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, val)
			}
		case []any:
			if len(x) > 0 {
				out[prefix] = compactJSON(x)
			}
		case []string:
			if len(x) > 0 {
				out[prefix] = compactJSON(x)
			}
		case string:
			if x != "" {
				out[prefix] = x
			}
		default:
			out[prefix] = compactJSON(x)
		}
	}
	walk("", v)
	return out
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// equivDeclared are the settings the file of the "equiv" case declares.
var equivDeclared = map[string][]string{
	"container web": {
		"Config.Entrypoint", "Config.Cmd", "Config.User", "Config.WorkingDir", "Config.Env", "Config.ExposedPorts",
		"Config.Healthcheck.Test", "Config.Healthcheck.Interval", "Config.Healthcheck.StartPeriod", "Config.Hostname",
		"Config.StopSignal", "Config.StopTimeout", "Config.Labels.com.example.team",
		"HostConfig.ReadonlyRootfs", "HostConfig.PortBindings.8080/tcp", "HostConfig.PortBindings.8081/udp",
		"HostConfig.RestartPolicy.Name", "HostConfig.Memory", "HostConfig.NanoCpus", "HostConfig.CapAdd", "HostConfig.CapDrop",
		"HostConfig.Sysctls", "HostConfig.Ulimits", "HostConfig.Init", "HostConfig.ShmSize", "HostConfig.ExtraHosts",
		"HostConfig.Dns", "HostConfig.DnsSearch", "HostConfig.LogConfig.Type", "HostConfig.LogConfig.Config.max-size",
		"Mounts./data.Volume", "Mounts./etc/app/app.conf.Content", "Mounts./etc/conf-dir.Content", "Mounts./tmp.Options.size",
		"Networks.back.Aliases",
	},
	"container worker": {
		"Config.Env", "Config.Domainname", "Config.Tty", "Config.OpenStdin", "Config.ExposedPorts",
		"HostConfig.Memory", "HostConfig.MemoryReservation", "HostConfig.NanoCpus", "HostConfig.PidsLimit",
		"HostConfig.RestartPolicy.MaximumRetryCount", "HostConfig.SecurityOpt", "HostConfig.GroupAdd", "HostConfig.DnsOptions",
		"Mounts./run/secrets/api_key.Content", "Networks.back.Aliases", "Networks.private.Aliases",
	},
	"container cache": {
		"Config.Healthcheck.Test", "Config.StopTimeout", "HostConfig.PortBindings.6379/tcp", "HostConfig.PortBindings.9101/tcp",
		"HostConfig.RestartPolicy.Name", "HostConfig.Ulimits", "Mounts./scratch.Options.size", "Mounts./data-ro.RW",
		"HostConfig.PortBindings.9102/tcp", "Published.9102/tcp",
	},
	"network back":    {"Options.com.docker.network.driver.mtu", "Labels.com.example.net"},
	"network private": {"Internal"},
	"volume data":     {"Labels.com.example.volume"},
}

// compareSides reports every difference that is not by design, and
// returns how often each by-design difference occurred.
func compareSides(t *testing.T, compose, driftless side, declared map[string][]string) map[string]int {
	t.Helper()
	used := map[string]int{}
	compared := 0
	for _, obj := range slices.Sorted(maps.Keys(compose.objects)) {
		c, d := compose.objects[obj], driftless.objects[obj]
		for _, path := range declared[obj] {
			if !hasSetting(c, path) || !hasSetting(d, path) {
				t.Errorf("%s: %s is declared by the file but missing: compose %q, driftless %q", obj, path, c[path], d[path])
			}
		}
		paths := slices.Sorted(maps.Keys(c))
		for p := range d {
			if _, ok := c[p]; !ok {
				paths = append(paths, p)
			}
		}
		for _, path := range paths {
			compared++
			cv, dv := c[path], d[path]
			if cv == dv {
				continue
			}
			i := slices.IndexFunc(equivDifferences, func(e equivDifference) bool { return e.match(obj, path, cv, dv) })
			if i >= 0 {
				used[equivDifferences[i].name]++
				t.Logf("by design: %s: %s: compose %s, driftless %s (%s)", obj, path, orUnset(cv), orUnset(dv), equivDifferences[i].name)
				continue
			}
			t.Errorf("%s: %s: compose %s, driftless %s", obj, path, orUnset(cv), orUnset(dv))
		}
	}
	t.Logf("compared %d settings of %d objects", compared, len(compose.objects))
	return used
}

// hasSetting tells whether a flattened object has path, or settings
// below it.
func hasSetting(flat map[string]string, path string) bool {
	if flat[path] != "" {
		return true
	}
	for k := range flat {
		if strings.HasPrefix(k, path+".") {
			return true
		}
	}
	return false
}

func orUnset(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}
