package manifest

// The raw types mirror the YAML documents field for field. They are the
// schema the node walker checks documents against (json tags name the YAML
// keys) and the targets of the strict decode; normalize turns them into the
// model types of types.go.

// quantity is a resource amount written as a string or a number
// ("512Mi", 1073741824, "0.5", 0.5). The walker passes its text through.
type quantity string

// ignored marks a field whose content is not checked: the spec of a
// document whose kind is unknown (the kind error says enough).
type ignored struct{}

type rawMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// rawHeader is what every document has; used when the kind is unknown.
type rawHeader struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   *rawMeta `json:"metadata"`
	Spec       *ignored `json:"spec"`
}

type rawServiceDoc struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   *rawMeta        `json:"metadata"`
	Spec       *rawServiceSpec `json:"spec"`
}

type rawNetworkDoc struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   *rawMeta        `json:"metadata"`
	Spec       *rawNetworkSpec `json:"spec"`
}

type rawVolumeDoc struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   *rawMeta       `json:"metadata"`
	Spec       *rawVolumeSpec `json:"spec"`
}

type rawServiceSpec struct {
	Image                  string            `json:"image"`
	Replicas               *int              `json:"replicas"`
	Command                []string          `json:"command"`
	Args                   []string          `json:"args"`
	Env                    map[string]string `json:"env"`
	SecretEnv              []string          `json:"secretEnv"`
	Ports                  []rawPort         `json:"ports"`
	Networks               []string          `json:"networks"`
	Volumes                []rawMount        `json:"volumes"`
	Resources              *rawResources     `json:"resources"`
	Readiness              *rawReadiness     `json:"readiness"`
	Restart                string            `json:"restart"`
	Update                 *rawUpdate        `json:"update"`
	DependsOn              []string          `json:"dependsOn"`
	StopGracePeriodSeconds *int              `json:"stopGracePeriodSeconds"`
}

type rawPort struct {
	ContainerPort *int   `json:"containerPort"`
	HostPort      *int   `json:"hostPort"`
	Protocol      string `json:"protocol"`
}

type rawMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly"`
}

type rawResources struct {
	Memory *quantity `json:"memory"`
	CPUs   *quantity `json:"cpus"`
}

type rawReadiness struct {
	HTTPGet             *rawHTTPGet   `json:"httpGet"`
	TCPSocket           *rawTCPSocket `json:"tcpSocket"`
	Exec                *rawExec      `json:"exec"`
	InitialDelaySeconds *int          `json:"initialDelaySeconds"`
	PeriodSeconds       *int          `json:"periodSeconds"`
	TimeoutSeconds      *int          `json:"timeoutSeconds"`
	SuccessThreshold    *int          `json:"successThreshold"`
	FailureThreshold    *int          `json:"failureThreshold"`
}

type rawHTTPGet struct {
	Path string `json:"path"`
	Port *int   `json:"port"`
}

type rawTCPSocket struct {
	Port *int `json:"port"`
}

type rawExec struct {
	Command []string `json:"command"`
}

type rawUpdate struct {
	Strategy       string `json:"strategy"`
	MaxSurge       *int   `json:"maxSurge"`
	MaxUnavailable *int   `json:"maxUnavailable"`
}

type rawNetworkSpec struct {
	Driver   string `json:"driver"`
	Internal bool   `json:"internal"`
}

type rawVolumeSpec struct {
	Driver string `json:"driver"`
}
