// Package composerules says what driftless's compose front end does with
// each attribute of a compose service and of its build: section: maps it
// onto the model, accepts it with a warning because it changes nothing a
// deployed app does, or refuses it with the reason. It is data only, kept
// apart from the front end's code so that the tables read as one list.
package composerules

// Every attribute of a compose service is either mapped onto the model,
// accepted because it changes nothing a deployed app does, or refused with
// the reason. None is dropped silently: an attribute compose-go knows and
// this table does not is refused as unsupported (and a test fails until it
// is added here).

// Mapped marks an attribute the front end maps onto the model (see the
// compose front end's mapService). The text is the target, for the
// documentation.
type Mapped string

// NoEffect marks an attribute that is accepted with a warning: what
// it controls has no counterpart in a deployed app.
type NoEffect string

// Refused marks an attribute refused when set, with the reason.
type Refused string

// Service says, for each service attribute, what happens to it.
var Service = map[string]any{
	"name":                Mapped("the service name (mapped to a DNS label)"),
	"profiles":            Mapped("selects whether the service is part of the app (load.Options.Profiles)"),
	"deploy":              Mapped("replicas, resources, update, restart policy (see the deploy rows)"),
	"restart":             Mapped("restart"),
	"scale":               Mapped("replicas"),
	"container_name":      Mapped("a network alias (containers are always named <app>-<service>-<slot>)"),
	"extends":             Mapped("merged by compose-go (a service of the same file, or of another file of the app directory with extends.file)"),
	"command":             Mapped("args"),
	"entrypoint":          Mapped("command"),
	"environment":         Mapped("env"),
	"env_file":            Mapped("env (read from the revision; SOPS-encrypted dotenv decrypted, as secret env)"),
	"image":               Mapped("image"),
	"labels":              Mapped("labels"),
	"ports":               Mapped("ports"),
	"expose":              Mapped("ports without a host port"),
	"volumes":             Mapped("volumes, binds, tmpfs"),
	"networks":            Mapped("networks, aliases"),
	"network_mode":        Mapped("networkMode"),
	"healthcheck":         Mapped("healthcheck"),
	"depends_on":          Mapped("dependsOn, dependsOnCondition, dependsOnRestart"),
	"stop_grace_period":   Mapped("stopGracePeriodSeconds"),
	"stop_signal":         Mapped("stopSignal"),
	"user":                Mapped("user"),
	"working_dir":         Mapped("workingDir"),
	"hostname":            Mapped("hostname"),
	"domainname":          Mapped("domainname"),
	"extra_hosts":         Mapped("extraHosts"),
	"dns":                 Mapped("dns"),
	"dns_search":          Mapped("dnsSearch"),
	"dns_opt":             Mapped("dnsOptions"),
	"cap_add":             Mapped("capAdd"),
	"cap_drop":            Mapped("capDrop"),
	"privileged":          Mapped("privileged"),
	"read_only":           Mapped("readOnlyRootfs"),
	"security_opt":        Mapped("securityOpt"),
	"sysctls":             Mapped("sysctls"),
	"ulimits":             Mapped("ulimits"),
	"init":                Mapped("init"),
	"tmpfs":               Mapped("tmpfs"),
	"shm_size":            Mapped("shmSizeBytes"),
	"logging":             Mapped("logging"),
	"devices":             Mapped("devices"),
	"gpus":                Mapped("deviceRequests, with capability gpu added (as docker compose does)"),
	"volumes_from":        Mapped("volumesFrom (a service of the app; container: refused), and the dependency compose adds"),
	"pid":                 Mapped("pid"),
	"ipc":                 Mapped("ipc"),
	"uts":                 Mapped("uts (host)"),
	"userns_mode":         Mapped("usernsMode (host; policy host-userns)"),
	"cgroup":              Mapped("cgroupns (host or private)"),
	"runtime":             Mapped("runtime (a runtime the engine is configured with; policy runtimes)"),
	"device_cgroup_rules": Mapped("deviceCgroupRules (policy devices)"),
	"group_add":           Mapped("groupAdd"),
	"tty":                 Mapped("tty"),
	"stdin_open":          Mapped("stdinOpen"),
	"mac_address":         Mapped("macAddress"),
	"secrets":             Mapped("secrets: decrypted files on a tmpfs, bind-mounted read-only"),
	"configs":             Mapped("binds of repository files, read-only"),
	"mem_limit":           Mapped("resources.memoryBytes"),
	"mem_reservation":     Mapped("resources.memoryReservationBytes"),
	"cpus":                Mapped("resources.nanoCPUs"),
	"pids_limit":          Mapped("resources.pidsLimit"),
	"cpu_shares":          Mapped("resources.cpuShares"),
	"cpuset":              Mapped("resources.cpuset"),
	"cpu_period":          Mapped("resources.cpuPeriod"),
	"cpu_quota":           Mapped("resources.cpuQuota"),
	"memswap_limit":       Mapped("resources.memorySwap"),
	"mem_swappiness":      Mapped("resources.memorySwappiness"),
	"oom_score_adj":       Mapped("resources.oomScoreAdj"),
	"oom_kill_disable":    Mapped("resources.oomKillDisable"),
	"platform":            Mapped("platform (pulled and created for it)"),
	"links":               Mapped("links (and dependsOn, as in compose)"),
	"pull_policy":         Mapped("pullPolicy: missing and if_not_present → missing, always, never; build with a build: section (built from the revision); daily, weekly, every_* refused"),
	"build":               Mapped("build: context, dockerfile, args, target (see the build rows)"),
	"post_start":          Mapped("postStart"),
	"pre_stop":            Mapped("preStop"),

	"develop": NoEffect("develop: configures docker compose watch, which a deployed app does not run"),
	"attach":  NoEffect("attach: only chooses whose logs docker compose up prints"),
	// A Linux engine keeps cpu_count without effect and drops cpu_percent
	// with a warning: what docker compose sends them to does nothing.
	"cpu_count":   NoEffect("cpu_count: is Windows-only, and a Linux engine ignores it; limit CPUs with deploy.resources.limits.cpus"),
	"cpu_percent": NoEffect("cpu_percent: is Windows-only, and a Linux engine ignores it; limit CPUs with deploy.resources.limits.cpus"),

	"annotations":   Refused("container annotations are not supported yet"),
	"blkio_config":  Mapped("resources.blkio"),
	"cgroup_parent": Refused("a custom cgroup parent is not supported"),

	"cpu_rt_period":  Refused("real-time scheduling is not supported"),
	"cpu_rt_runtime": Refused("real-time scheduling is not supported"),

	"credential_spec": Refused("is Windows-only"),
	"isolation":       Refused("is Windows-only"),
	"label_file":      Mapped("labels"),
	"log_driver":      Refused("is the legacy spelling: use logging: {driver: ...}"),
	"log_opt":         Refused("is the legacy spelling: use logging: {options: ...}"),

	"models": Refused("AI models are not supported"),

	"pull_refresh_after": Refused("pull policies come with image support"),
	"storage_opt":        Refused("storage driver options are not supported"),
	"umask":              Refused("is not supported yet"),
	"use_api_socket":     Refused("gives the container the Docker socket, which is root on the host; mount it explicitly (policy docker-socket) if you must"),
	"volume_driver":      Refused("is not supported: set the driver on the top-level volume"),
	"provider":           Refused("provider services are not supported"),
	"external_links":     Refused("is not supported: join an external network instead"),

	"net":        Refused("is the legacy spelling: use network_mode"),
	"pre_start":  Refused("lifecycle hooks are not supported yet"),
	"dockerfile": Refused("is not supported yet: build and tag the image, then set image:"),
}

// Build says, for each attribute of a compose service's
// build:, what happens to it; as with Service, an attribute
// this table does not know is refused.
var Build = map[string]any{
	"context":             Mapped("build.context (a directory of the app in the revision)"),
	"dockerfile":          Mapped("build.dockerfile (relative to the context)"),
	"args":                Mapped("build.args"),
	"target":              Mapped("build.target"),
	"dockerfile_inline":   Mapped("build.dockerfileInline (sent in the context as .driftless-inline.Dockerfile)"),
	"additional_contexts": Refused("is not supported: the context is one directory of the revision"),
	"cache_from":          NoEffect("only seeds the build cache, which changes no image built: the engine's own build cache is used"),
	"cache_to":            Refused("is not supported: the engine's own build cache is used"),
	"no_cache":            Mapped("build.noCache (a build runs only when the context changed)"),
	"no_cache_filter":     Refused("is not supported"),
	"pull":                Mapped("build.pull (a build runs only when the context changed)"),
	"tags":                Mapped("build.tags"),
	"labels":              Mapped("build.labels"),
	"secrets":             Refused("build secrets are not supported"),
	"ssh":                 Refused("build SSH forwarding is not supported"),
	"entitlements":        Refused("build entitlements are not supported"),
	"privileged":          Refused("privileged builds are not supported"),
	"network":             Refused("build networks are not supported"),
	"extra_hosts":         Refused("is not supported for builds"),
	"isolation":           Refused("is Windows-only"),
	"platforms":           Refused("is not supported: driftless builds for the engine's own platform"),
	"provenance":          Refused("needs BuildKit attestations, which driftless does not produce"),
	"sbom":                Refused("needs BuildKit attestations, which driftless does not produce"),
	"shm_size":            Refused("is not supported for builds"),
	"ulimits":             Refused("is not supported for builds"),
}
