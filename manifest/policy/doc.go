// Package policy bounds what an app's manifests may ask for: host power only
// as far as the app's configuration allows it (Policy, with host paths
// judged where they land on this host: Host), no more than its limits
// (Limits, and the read budget every load goes through), and, for a Swarm
// target, only what Swarm can carry out (CheckSwarm).
package policy
