// Package native is the front end of driftless's own manifests
// (apiVersion driftless.dev/v1): every YAML document under the app
// directory is checked against its kind's schema, validated with the others
// and normalized into a manifest.App, every error at its file:line:column.
package native
