// Package examples embeds the example apps so `driftless demo` can seed its
// Git repository with exactly the manifests documented here.
package examples

import "embed"

// Shop is the example app in examples/shop: a web service with three
// replicas and a readiness probe, a cache with a volume, one network.
//
//go:embed shop/*.yaml
var Shop embed.FS

// ComposeShop is the example compose app in examples/compose-shop: a plain
// compose.yaml with .env interpolation, a config file from the repository
// and an x-driftless readiness probe.
//
//go:embed all:compose-shop
var ComposeShop embed.FS

// Apps is the example repository of apps in examples/apps: a directory per
// app (apps/hello), the layout a source's `directories: ['apps/*']` reads.
//
//go:embed apps
var Apps embed.FS
