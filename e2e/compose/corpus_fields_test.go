package compose

// fieldsStacks are the corpus stacks for SELinux labels, tmpfs options, home directories and the refused fields that have a faithful mapping.
func fieldsStacks() []corpusStack { return nil }

// fieldsEquivCases are the equivalence cases for SELinux labels, tmpfs
// options, the host's time zone files and the fields that moved from
// refused to mapped: both tools must set each of them.
func fieldsEquivCases() []equivCase {
	return []equivCase{{
		dir:      "equiv-fields",
		services: []string{"web", "db"},
		networks: []string{"default"},
		volumes:  []string{"data", "logs", "dbdata"},
		declared: map[string][]string{
			"container web": {
				"Mounts./var/lib/app.SELinux", "Mounts./var/log/app.SELinux", "Mounts./var/log/app.RW", "Mounts./etc/app.SELinux",
				"Mounts./etc/app.Content", "Mounts./etc/localtime.Content", "Mounts./etc/timezone.Content", "Mounts./etc/timezone.RW",
				"Mounts./config.Options.exec", "Mounts./config.Options.uid", "Mounts./config.Options.gid", "Mounts./config.Options.mode",
				"Mounts./config.Options.size", "Mounts./run/app.Options.noexec", "Mounts./run/app.Options.nosuid", "Mounts./run/app.Options.nodev",
				"Networks.default.Links",
				"HostConfig.CpuShares", "HostConfig.CpusetCpus", "HostConfig.CpuPeriod", "HostConfig.CpuQuota", "HostConfig.Memory",
				"HostConfig.MemorySwap", "HostConfig.MemorySwappiness", "HostConfig.OomScoreAdj", "HostConfig.OomKillDisable",
			},
			"container db": {"Mounts./var/lib/db.SELinux", "HostConfig.OomScoreAdj"},
		},
	}}
}
