package native

import (
	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// The raw types mirror the YAML documents field for field. They are the
// schema the node walker checks documents against (json tags name the YAML
// keys) and the targets of the strict decode; normalize turns them into the
// model types of types.go.

type rawMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// rawHeader is what every document has; used when the kind is unknown.
type rawHeader struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   *rawMeta         `json:"metadata"`
	Spec       *yamlpos.Ignored `json:"spec"`
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
	Image                  string               `json:"image"`
	Replicas               *int                 `json:"replicas"`
	Command                []string             `json:"command"`
	Args                   []string             `json:"args"`
	ClearEntrypoint        bool                 `json:"clearEntrypoint"`
	Env                    map[string]string    `json:"env"`
	SecretEnv              []string             `json:"secretEnv"`
	Secrets                []manifest.SecretRef `json:"secrets"`
	EnvFrom                []manifest.EnvFrom   `json:"envFrom"`
	Ports                  []rawPort            `json:"ports"`
	Networks               []string             `json:"networks"`
	Volumes                []rawMount           `json:"volumes"`
	Resources              *rawResources        `json:"resources"`
	Readiness              *RawReadiness        `json:"readiness"`
	Restart                string               `json:"restart"`
	Update                 *rawUpdate           `json:"update"`
	DependsOn              []string             `json:"dependsOn"`
	StopGracePeriodSeconds *int                 `json:"stopGracePeriodSeconds"`

	// Optional fields shared with compose files (see ServiceSpec).
	DependsOnCondition map[string]string           `json:"dependsOnCondition"`
	DependsOnRestart   []string                    `json:"dependsOnRestart"`
	RestartMaxRetries  *int                        `json:"restartMaxRetries"`
	Healthcheck        *rawHealthcheck             `json:"healthcheck"`
	MinReadySeconds    *int                        `json:"minReadySeconds"`
	User               string                      `json:"user"`
	WorkingDir         string                      `json:"workingDir"`
	Hostname           string                      `json:"hostname"`
	Domainname         string                      `json:"domainname"`
	Init               bool                        `json:"init"`
	StopSignal         *yamlpos.Scalar             `json:"stopSignal"`
	TTY                bool                        `json:"tty"`
	StdinOpen          bool                        `json:"stdinOpen"`
	NetworkMode        string                      `json:"networkMode"`
	Addresses          map[string]manifest.Address `json:"addresses"`
	NetworkPriority    map[string]int              `json:"networkPriority"`
	PostStart          []manifest.Hook             `json:"postStart"`
	PreStop            []manifest.Hook             `json:"preStop"`
	Aliases            map[string][]string         `json:"aliases"`
	ExtraHosts         []string                    `json:"extraHosts"`
	DNS                []string                    `json:"dns"`
	DNSSearch          []string                    `json:"dnsSearch"`
	DNSOptions         []string                    `json:"dnsOptions"`
	MacAddress         string                      `json:"macAddress"`
	Binds              []rawBind                   `json:"binds"`
	Tmpfs              []rawTmpfs                  `json:"tmpfs"`
	AnonymousVolumes   []rawAnonymousVolume        `json:"anonymousVolumes"`
	Privileged         bool                        `json:"privileged"`
	ReadOnlyRootfs     bool                        `json:"readOnlyRootfs"`
	CapAdd             []string                    `json:"capAdd"`
	CapDrop            []string                    `json:"capDrop"`
	SecurityOpt        []string                    `json:"securityOpt"`
	Devices            []rawDevice                 `json:"devices"`
	DeviceRequests     []rawDeviceRequest          `json:"deviceRequests"`
	VolumesFrom        []manifest.VolumesFrom      `json:"volumesFrom"`
	GroupAdd           []yamlpos.Scalar            `json:"groupAdd"`
	PID                string                      `json:"pid"`
	IPC                string                      `json:"ipc"`
	UTS                string                      `json:"uts"`
	UsernsMode         string                      `json:"usernsMode"`
	CgroupNS           string                      `json:"cgroupns"`
	Runtime            string                      `json:"runtime"`
	DeviceCgroupRules  []string                    `json:"deviceCgroupRules"`
	Sysctls            map[string]yamlpos.Scalar   `json:"sysctls"`
	Ulimits            []rawUlimit                 `json:"ulimits"`
	ShmSize            *yamlpos.Quantity           `json:"shmSize"`
	Logging            *rawLogging                 `json:"logging"`
	Build              *rawBuild                   `json:"build"`
	Platform           string                      `json:"platform"`
	Links              []string                    `json:"links"`

	// Image handling (not part of the hashed spec; see Service).
	PullPolicy  string          `json:"pullPolicy"`
	ImageUpdate *RawImageUpdate `json:"imageUpdate"`
}

// rawBuild builds the image from the revision (compose's build:).
type rawBuild struct {
	Context          string            `json:"context"`
	Dockerfile       string            `json:"dockerfile"`
	DockerfileInline string            `json:"dockerfileInline"`
	Args             map[string]string `json:"args"`
	Target           string            `json:"target"`
	Labels           map[string]string `json:"labels"`
	Tags             []string          `json:"tags"`
	NoCache          bool              `json:"noCache"`
	Pull             bool              `json:"pull"`
}

type RawImageUpdate struct {
	Interval string `json:"interval"`
}

type rawHealthcheck struct {
	Test          []string          `json:"test"`
	Interval      *yamlpos.Duration `json:"interval"`
	Timeout       *yamlpos.Duration `json:"timeout"`
	StartPeriod   *yamlpos.Duration `json:"startPeriod"`
	StartInterval *yamlpos.Duration `json:"startInterval"`
	Retries       *int              `json:"retries"`
	Disable       bool              `json:"disable"`
}

type rawBind struct {
	HostPath       string `json:"hostPath"`
	RepoPath       string `json:"repoPath"`
	StatePath      string `json:"statePath"`
	MountPath      string `json:"mountPath"`
	ReadOnly       *bool  `json:"readOnly"`
	CreateHostPath bool   `json:"createHostPath"`
	Propagation    string `json:"propagation"`
	SELinux        string `json:"selinux"`
}

type rawTmpfs struct {
	MountPath string            `json:"mountPath"`
	Size      *yamlpos.Quantity `json:"size"`
	Mode      *yamlpos.Scalar   `json:"mode"`
	Options   []string          `json:"options"`
}

// rawAnonymousVolume is a volume of each replica slot (compose's
// anonymous volume).
type rawAnonymousVolume struct {
	MountPath string `json:"mountPath"`
	NoCopy    bool   `json:"noCopy"`
}

type rawDevice struct {
	HostPath      string `json:"hostPath"`
	ContainerPath string `json:"containerPath"`
	Permissions   string `json:"permissions"`
}

type rawUlimit struct {
	Name string `json:"name"`
	Soft *int   `json:"soft"`
	Hard *int   `json:"hard"`
}

type rawLogging struct {
	Driver  string            `json:"driver"`
	Options map[string]string `json:"options"`
}

type rawPort struct {
	ContainerPort *int   `json:"containerPort"`
	HostPort      *int   `json:"hostPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP"`
}

type rawMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly"`
	SELinux   string `json:"selinux"`
	NoCopy    bool   `json:"noCopy"`
}

type rawResources struct {
	Memory *yamlpos.Quantity `json:"memory"`
	CPUs   *yamlpos.Quantity `json:"cpus"`
	// Pids bounds the number of processes; MemoryReservation is a soft
	// memory limit.
	Pids              *int              `json:"pids"`
	MemoryReservation *yamlpos.Quantity `json:"memoryReservation"`
	// Scheduler and OOM tuning (see manifest.Resources).
	CPUShares        *int              `json:"cpuShares"`
	CPUSet           string            `json:"cpuset"`
	CPUPeriod        *int              `json:"cpuPeriod"`
	CPUQuota         *int              `json:"cpuQuota"`
	MemorySwap       *yamlpos.Quantity `json:"memorySwap"`
	MemorySwappiness *int              `json:"memorySwappiness"`
	OOMScoreAdj      *int              `json:"oomScoreAdj"`
	OOMKillDisable   bool              `json:"oomKillDisable"`
	Blkio            *rawBlkio         `json:"blkio"`
}

// rawBlkio is resources.blkio: rates in bytes are quantities ("10Mi"),
// rates in operations whole numbers.
type rawBlkio struct {
	Weight          *int              `json:"weight"`
	WeightDevice    []rawWeightDevice `json:"weightDevice"`
	DeviceReadBps   []rawThrottle     `json:"deviceReadBps"`
	DeviceWriteBps  []rawThrottle     `json:"deviceWriteBps"`
	DeviceReadIOps  []rawThrottle     `json:"deviceReadIOps"`
	DeviceWriteIOps []rawThrottle     `json:"deviceWriteIOps"`
}

type rawWeightDevice struct {
	Path   string `json:"path"`
	Weight *int   `json:"weight"`
}

type rawThrottle struct {
	Path string            `json:"path"`
	Rate *yamlpos.Quantity `json:"rate"`
}

type RawReadiness struct {
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
	Shell   bool     `json:"shell"`
}

type rawUpdate struct {
	Strategy       string            `json:"strategy"`
	MaxSurge       *int              `json:"maxSurge"`
	MaxUnavailable *int              `json:"maxUnavailable"`
	Delay          *yamlpos.Duration `json:"delay"`
	Canary         *int              `json:"canary"`
	CanaryWatch    *yamlpos.Duration `json:"canaryWatch"`
}

type rawNetworkSpec struct {
	Driver     string            `json:"driver"`
	Internal   bool              `json:"internal"`
	Attachable bool              `json:"attachable"`
	EnableIPv6 bool              `json:"enableIPv6"`
	DriverOpts map[string]string `json:"driverOpts"`
	Subnet     string            `json:"subnet"`
	SubnetV6   string            `json:"subnetV6"`
	Gateway    string            `json:"gateway"`
	IPRange    string            `json:"ipRange"`
	// External: the network exists under Name (default metadata.name);
	// without it, Name is the Docker name driftless gives the network.
	External bool   `json:"external"`
	Name     string `json:"name"`
}

type rawVolumeSpec struct {
	Driver     string            `json:"driver"`
	DriverOpts map[string]string `json:"driverOpts"`
	External   bool              `json:"external"`
	Name       string            `json:"name"`
}
