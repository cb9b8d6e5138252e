package manifest

// Defaults. Every default is applied here and nowhere else.
const (
	DefaultReplicas         = 1
	DefaultProtocol         = "tcp"
	DefaultHTTPPath         = "/"
	DefaultPeriodSeconds    = 2
	DefaultTimeoutSeconds   = 1
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
	DefaultMaxSurge         = 1
	DefaultMaxUnavailable   = 0
	DefaultStopGrace        = 10
	DefaultNetworkDriver    = "bridge"
	DefaultVolumeDriver     = "local"
	// DefaultDevicePermissions is Docker's: read, write, mknod.
	DefaultDevicePermissions = "rwm"
)
