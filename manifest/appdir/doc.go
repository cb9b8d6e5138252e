// Package appdir loads the app directory of one revision into a
// manifest.App: it picks the front end the directory calls for (a compose
// file makes it a compose app, anything else is read as native manifests),
// bounds every read by the app's limits, and finishes what both share, the
// Swarm target's checks and the hashes keyed with the agent's secret key.
package appdir
