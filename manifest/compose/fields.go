package compose

import (
	"reflect"

	"github.com/driftless-dev/driftless/manifest/internal/composeschema"
)

// Every attribute of a compose service is either mapped onto the model,
// accepted because it changes nothing a deployed app does, or refused with
// the reason. None is dropped silently: an attribute compose-go knows and
// this table does not is refused as unsupported (and a test fails until it
// is added here).

// composeMapped marks an attribute the front end maps onto the model (see
// mapService). The text is the target, for the documentation.
type composeMapped string

// composeNoEffect marks an attribute that is accepted with a warning: what
// it controls has no counterpart in a deployed app.
type composeNoEffect string

// composeRefused marks an attribute refused when set, with the reason.
type composeRefused string

// composeServiceRules says, for each service attribute, what happens to it.
var composeServiceRules = map[string]any{
	"name":                composeMapped("the service name (mapped to a DNS label)"),
	"profiles":            composeMapped("selects whether the service is part of the app (load.Options.Profiles)"),
	"deploy":              composeMapped("replicas, resources, update, restart policy (see the deploy rows)"),
	"restart":             composeMapped("restart"),
	"scale":               composeMapped("replicas"),
	"container_name":      composeMapped("a network alias (containers are always named <app>-<service>-<slot>)"),
	"extends":             composeMapped("merged by compose-go (a service of the same file, or of another file of the app directory with extends.file)"),
	"command":             composeMapped("args"),
	"entrypoint":          composeMapped("command"),
	"environment":         composeMapped("env"),
	"env_file":            composeMapped("env (read from the revision; SOPS-encrypted dotenv decrypted, as secret env)"),
	"image":               composeMapped("image"),
	"labels":              composeMapped("labels"),
	"ports":               composeMapped("ports"),
	"expose":              composeMapped("ports without a host port"),
	"volumes":             composeMapped("volumes, binds, tmpfs"),
	"networks":            composeMapped("networks, aliases"),
	"network_mode":        composeMapped("networkMode"),
	"healthcheck":         composeMapped("healthcheck"),
	"depends_on":          composeMapped("dependsOn, dependsOnCondition, dependsOnRestart"),
	"stop_grace_period":   composeMapped("stopGracePeriodSeconds"),
	"stop_signal":         composeMapped("stopSignal"),
	"user":                composeMapped("user"),
	"working_dir":         composeMapped("workingDir"),
	"hostname":            composeMapped("hostname"),
	"domainname":          composeMapped("domainname"),
	"extra_hosts":         composeMapped("extraHosts"),
	"dns":                 composeMapped("dns"),
	"dns_search":          composeMapped("dnsSearch"),
	"dns_opt":             composeMapped("dnsOptions"),
	"cap_add":             composeMapped("capAdd"),
	"cap_drop":            composeMapped("capDrop"),
	"privileged":          composeMapped("privileged"),
	"read_only":           composeMapped("readOnlyRootfs"),
	"security_opt":        composeMapped("securityOpt"),
	"sysctls":             composeMapped("sysctls"),
	"ulimits":             composeMapped("ulimits"),
	"init":                composeMapped("init"),
	"tmpfs":               composeMapped("tmpfs"),
	"shm_size":            composeMapped("shmSizeBytes"),
	"logging":             composeMapped("logging"),
	"devices":             composeMapped("devices"),
	"gpus":                composeMapped("deviceRequests, with capability gpu added (as docker compose does)"),
	"volumes_from":        composeMapped("volumesFrom (a service of the app; container: refused), and the dependency compose adds"),
	"pid":                 composeMapped("pid"),
	"ipc":                 composeMapped("ipc"),
	"uts":                 composeMapped("uts (host)"),
	"userns_mode":         composeMapped("usernsMode (host; policy host-userns)"),
	"cgroup":              composeMapped("cgroupns (host or private)"),
	"runtime":             composeMapped("runtime (a runtime the engine is configured with; policy runtimes)"),
	"device_cgroup_rules": composeMapped("deviceCgroupRules (policy devices)"),
	"group_add":           composeMapped("groupAdd"),
	"tty":                 composeMapped("tty"),
	"stdin_open":          composeMapped("stdinOpen"),
	"mac_address":         composeMapped("macAddress"),
	"secrets":             composeMapped("secrets: decrypted files on a tmpfs, bind-mounted read-only"),
	"configs":             composeMapped("binds of repository files, read-only"),
	"mem_limit":           composeMapped("resources.memoryBytes"),
	"mem_reservation":     composeMapped("resources.memoryReservationBytes"),
	"cpus":                composeMapped("resources.nanoCPUs"),
	"pids_limit":          composeMapped("resources.pidsLimit"),
	"cpu_shares":          composeMapped("resources.cpuShares"),
	"cpuset":              composeMapped("resources.cpuset"),
	"cpu_period":          composeMapped("resources.cpuPeriod"),
	"cpu_quota":           composeMapped("resources.cpuQuota"),
	"memswap_limit":       composeMapped("resources.memorySwap"),
	"mem_swappiness":      composeMapped("resources.memorySwappiness"),
	"oom_score_adj":       composeMapped("resources.oomScoreAdj"),
	"oom_kill_disable":    composeMapped("resources.oomKillDisable"),
	"platform":            composeMapped("platform (pulled and created for it)"),
	"links":               composeMapped("links (and dependsOn, as in compose)"),
	"pull_policy":         composeMapped("pullPolicy: missing and if_not_present → missing, always, never (build, daily, weekly, every_* refused)"),
	"build":               composeMapped("build: context, dockerfile, args, target (see the build rows)"),
	"post_start":          composeMapped("postStart"),
	"pre_stop":            composeMapped("preStop"),

	"develop": composeNoEffect("develop: configures docker compose watch, which a deployed app does not run"),
	"attach":  composeNoEffect("attach: only chooses whose logs docker compose up prints"),
	// A Linux engine keeps cpu_count without effect and drops cpu_percent
	// with a warning: what docker compose sends them to does nothing.
	"cpu_count":   composeNoEffect("cpu_count: is Windows-only, and a Linux engine ignores it; limit CPUs with deploy.resources.limits.cpus"),
	"cpu_percent": composeNoEffect("cpu_percent: is Windows-only, and a Linux engine ignores it; limit CPUs with deploy.resources.limits.cpus"),

	"annotations":   composeRefused("container annotations are not supported yet"),
	"blkio_config":  composeRefused("block IO limits are not supported yet"),
	"cgroup_parent": composeRefused("a custom cgroup parent is not supported"),

	"cpu_rt_period":  composeRefused("real-time scheduling is not supported"),
	"cpu_rt_runtime": composeRefused("real-time scheduling is not supported"),

	"credential_spec": composeRefused("is Windows-only"),
	"isolation":       composeRefused("is Windows-only"),
	"label_file":      composeMapped("labels"),
	"log_driver":      composeRefused("is the legacy spelling: use logging: {driver: ...}"),
	"log_opt":         composeRefused("is the legacy spelling: use logging: {options: ...}"),

	"models": composeRefused("AI models are not supported"),

	"pull_refresh_after": composeRefused("pull policies come with image support"),
	"storage_opt":        composeRefused("storage driver options are not supported"),
	"umask":              composeRefused("is not supported yet"),
	"use_api_socket":     composeRefused("gives the container the Docker socket, which is root on the host; mount it explicitly (policy docker-socket) if you must"),
	"volume_driver":      composeRefused("is not supported: set the driver on the top-level volume"),
	"provider":           composeRefused("provider services are not supported"),
	"external_links":     composeRefused("is not supported: join an external network instead"),

	"net":        composeRefused("is the legacy spelling: use network_mode"),
	"pre_start":  composeRefused("lifecycle hooks are not supported yet"),
	"dockerfile": composeRefused("is not supported yet: build and tag the image, then set image:"),
}

// refuseUnmapped refuses every attribute the service sets that the table
// marks refused (or does not know), and warns about the ones without
// effect.
func (sm *serviceMap) refuseUnmapped() {
	v := reflect.ValueOf(sm.s).Elem()
	for _, f := range composeschema.ServiceFields() {
		fv := v.FieldByIndex(f.Index)
		if fv.IsZero() {
			continue
		}
		switch r := composeServiceRules[f.Name].(type) {
		case composeMapped:
		case composeNoEffect:
			sm.warn(f.Name, "has no effect in driftless: %s", string(r))
		case composeRefused:
			sm.refuse(f.Name, "%s", string(r))
		default:
			sm.refuse(f.Name, "is not supported by driftless yet")
		}
	}
}
