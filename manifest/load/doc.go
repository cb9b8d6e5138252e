// Package load reads from a revision what an app's manifests name beside
// themselves, for both front ends: the options the app's configuration adds
// (Options), the files .driftlessignore leaves out, the repository files
// bind mounts materialize, build contexts as .dockerignore shapes them, and
// SOPS-encrypted secrets and env files.
package load
