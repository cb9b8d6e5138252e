package manifest

// VolumesFrom is one entry of ServiceSpec.VolumesFrom: the replicas mount
// every volume and bind of Service's first replica at the same paths, as
// docker compose's volumes_from: [service] does with the service's first
// container. Only a service of the same app can be named: another app's
// or a foreign container's volumes are not the commit's to reach.
type VolumesFrom struct {
	Service  string `json:"service"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// String is the entry as Docker's HostConfig.VolumesFrom writes it, with
// the service's name for the container's.
func (v VolumesFrom) String() string {
	if v.ReadOnly {
		return v.Service + ":ro"
	}
	return v.Service
}
