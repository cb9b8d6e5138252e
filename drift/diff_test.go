package drift

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// Every field added for compose files shows in a diff, readably, in a
// fixed order; credentials in log options never show.
func TestDiffServiceSpecNewFields(t *testing.T) {
	base := manifest.ServiceSpec{Image: "web:v1", Replicas: 1, Networks: []string{"default"}, Restart: manifest.RestartOnFailure}
	tests := []struct {
		name   string
		change func(*manifest.ServiceSpec)
		want   []FieldChange
	}{
		{"restart retries", func(s *manifest.ServiceSpec) { s.RestartMaxRetries = 3 }, []FieldChange{{"restartMaxRetries", "unlimited", "3"}}},
		{"entrypoint cleared", func(s *manifest.ServiceSpec) { s.ClearEntrypoint = true }, []FieldChange{{"command", "(none)", "(none: the image's cleared)"}}},
		{"pids and reservation", func(s *manifest.ServiceSpec) {
			s.Resources.PidsLimit, s.Resources.MemoryReservationBytes = 100, 64<<20
		}, []FieldChange{{"resources.pids", "unlimited", "100"}, {"resources.memoryReservation", "(none)", "64Mi"}}},
		{"update delay", func(s *manifest.ServiceSpec) { s.Update.Delay = 90 * time.Second }, []FieldChange{{"update.delay", "0s", "1m30s"}}},
		{"healthcheck", func(s *manifest.ServiceSpec) {
			s.Healthcheck = &manifest.Healthcheck{Test: []string{"CMD-SHELL", "curl -f localhost"}, Interval: 10 * time.Second, Timeout: 500 * time.Millisecond, Retries: 3}
		}, []FieldChange{{"healthcheck", "(image's)", `["CMD-SHELL" "curl -f localhost"], every 10s, timeout 500ms, retries 3`}}},
		{"minReadySeconds", func(s *manifest.ServiceSpec) { d := 15 * time.Second; s.MinReady = &d },
			[]FieldChange{{"minReadySeconds", "(settle time)", "15s"}}},
		{"healthcheck disabled", func(s *manifest.ServiceSpec) { s.Healthcheck = &manifest.Healthcheck{Test: []string{"NONE"}} },
			[]FieldChange{{"healthcheck", "(image's)", "disabled"}}},
		{"process", func(s *manifest.ServiceSpec) {
			s.User, s.WorkingDir, s.Hostname, s.Domainname = "1000:1000", "/srv", "h", "example.org"
			s.Init, s.StopSignal, s.TTY, s.StdinOpen = true, "SIGQUIT", true, true
		}, []FieldChange{
			{"user", "(image's)", "1000:1000"}, {"workingDir", "(image's)", "/srv"}, {"hostname", "(container ID)", "h"},
			{"domainname", "(none)", "example.org"}, {"init", "false", "true"}, {"stopSignal", "(image's)", "SIGQUIT"},
			{"tty", "false", "true"}, {"stdinOpen", "false", "true"}}},
		{"networking", func(s *manifest.ServiceSpec) {
			s.Aliases = map[string][]string{"default": {"www", "api"}, "b": {"x"}}
			s.ExtraHosts, s.DNS, s.DNSSearch, s.DNSOptions = []string{"db:10.0.0.5"}, []string{"1.1.1.1", "8.8.8.8"}, []string{"example.org"}, []string{"ndots:2"}
			s.MacAddress = "02:42:ac:11:00:02"
			s.Ports = []manifest.Port{{ContainerPort: 80, HostPort: 8080, Protocol: "tcp", HostIP: "127.0.0.1"}}
		}, []FieldChange{
			{"ports", "(none)", "127.0.0.1:8080:80/tcp"},
			{"aliases", "(none)", "b: x, default: api www"}, {"extraHosts", "(none)", "db:10.0.0.5"},
			{"dns", "(none)", "1.1.1.1, 8.8.8.8"}, {"dnsSearch", "(none)", "example.org"}, {"dnsOptions", "(none)", "ndots:2"},
			{"macAddress", "(none)", "02:42:ac:11:00:02"}}},
		{"network priority", func(s *manifest.ServiceSpec) { s.NetworkPriority = map[string]int{"front": 10, "back": -1} },
			[]FieldChange{{"networkPriority", "(none)", "back: -1, front: 10"}}},
		{"hooks", func(s *manifest.ServiceSpec) {
			s.PostStart = []manifest.Hook{{Command: []string{"chown", "-R", "1001", "/data"}, User: "root"}}
			s.PreStop = []manifest.Hook{{Command: []string{"./flush"}, WorkingDir: "/app", Privileged: true, Env: map[string]string{"B": "2", "A": "1"}}}
		}, []FieldChange{{"postStart", "(none)", `["chown" "-R" "1001" "/data"] as root`}, {"preStop", "(none)", `["./flush"] privileged in /app A=1 B=2`}}},
		{"block IO", func(s *manifest.ServiceSpec) {
			s.Resources.Blkio = &manifest.Blkio{Weight: 300, WeightDevice: []manifest.WeightDevice{{Path: "/dev/sda", Weight: 400}},
				DeviceReadBps: []manifest.ThrottleDevice{{Path: "/dev/sda", Rate: 12 << 20}}, DeviceWriteIOps: []manifest.ThrottleDevice{{Path: "/dev/sdb", Rate: 30}}}
		}, []FieldChange{{"resources.blkio", "(none)", "weight 300; weight 400 on /dev/sda; read 12Mi/s on /dev/sda; write 30 ops/s on /dev/sdb"}}},
		{"network mode", func(s *manifest.ServiceSpec) { s.NetworkMode, s.Networks = manifest.NetworkHost, nil },
			[]FieldChange{{"networks", "default", "(none)"}, {"networkMode", "(app networks)", "host"}}},
		{"mounts", func(s *manifest.ServiceSpec) {
			s.Binds = []manifest.BindMount{
				{HostPath: "/srv/data", MountPath: "/data", CreateHostPath: true, Propagation: "rslave", SELinux: "z"},
				{RepoPath: "conf", ContentHash: "0123456789abcdef", MountPath: "/etc/app", ReadOnly: true},
			}
			s.Tmpfs = []manifest.TmpfsMount{{MountPath: "/tmp", SizeBytes: 64 << 20, Mode: 0o1777}}
		}, []FieldChange{
			{"binds", "(none)", "/srv/data:/data:create,rslave,z, repo:conf@0123456789abcdef:/etc/app:ro"},
			{"tmpfs", "(none)", "/tmp size=64Mi mode=1777"}}},
		{"volume options", func(s *manifest.ServiceSpec) {
			s.Volumes = []manifest.VolumeMount{{Name: "data", MountPath: "/data", NoCopy: true}, {Name: "logs", MountPath: "/logs", ReadOnly: true, SELinux: "Z", NoCopy: true}}
			s.AnonymousVolumes = []manifest.AnonymousVolume{{MountPath: "/scratch", NoCopy: true}}
		}, []FieldChange{
			{"volumes", "(none)", "data:/data:nocopy, logs:/logs:ro,Z,nocopy"},
			{"anonymousVolumes", "(none)", "/scratch:nocopy"}}},
		{"security", func(s *manifest.ServiceSpec) {
			s.Privileged, s.ReadOnlyRootfs = true, true
			s.CapAdd, s.CapDrop, s.SecurityOpt = []string{"SYS_TIME", "NET_ADMIN"}, []string{"ALL"}, []string{"no-new-privileges"}
			s.Devices = []manifest.Device{{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rwm"}}
			s.GroupAdd, s.PID, s.IPC = []string{"audio"}, "host", "shareable"
		}, []FieldChange{
			{"privileged", "false", "true"}, {"readOnlyRootfs", "false", "true"}, {"capAdd", "(none)", "NET_ADMIN, SYS_TIME"},
			{"capDrop", "(none)", "ALL"}, {"securityOpt", "(none)", "no-new-privileges"}, {"devices", "(none)", "/dev/fuse:/dev/fuse:rwm"},
			{"groupAdd", "(none)", "audio"}, {"pid", "(own)", "host"}, {"ipc", "(Docker's default)", "shareable"}}},
		{"device requests", func(s *manifest.ServiceSpec) {
			s.DeviceRequests = []manifest.DeviceRequest{
				{Driver: "nvidia", Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}},
				{Driver: "nvidia", DeviceIDs: []string{"0", "1"}, Capabilities: [][]string{{"gpu", "utility"}}},
			}
		}, []FieldChange{{"deviceRequests", "(none)", "nvidia count=all caps=[gpu], nvidia ids=0,1 caps=[gpu,utility]"}}},
		{"limits and logging", func(s *manifest.ServiceSpec) {
			s.Sysctls = map[string]string{"net.core.somaxconn": "1024"}
			s.Ulimits = []manifest.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}}
			s.ShmSizeBytes = 128 << 20
			s.Logging = &manifest.Logging{Driver: "splunk", Options: map[string]string{"splunk-url": "https://s", "splunk-token": "t0ps3cret"}}
		}, []FieldChange{
			{"sysctls", "(none)", "net.core.somaxconn=1024"}, {"ulimits", "(none)", "nofile=1024:4096"},
			{"shmSize", "(Docker's default)", "128Mi"}, {"logging", "(Docker's default)", "splunk (splunk-token=(sensitive), splunk-url=https://s)"}}},
		{"exec shell", func(s *manifest.ServiceSpec) {
			s.Readiness = &manifest.Readiness{Exec: &manifest.ExecProbe{Command: []string{"pg_isready"}, Shell: true}, PeriodSeconds: 2, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
		}, []FieldChange{{"readiness", "(none)", `exec shell ["pg_isready"] (delay 0s, every 2s, timeout 1s, success 1, failure 3)`}}},
		{"conditions are not listed", func(s *manifest.ServiceSpec) {
			s.DependsOn, s.DependsOnCondition = []string{"db"}, map[string]string{"db": manifest.DependsStarted}
			s.DependsOnRestart = []string{"db"}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := base
			tt.change(&after)
			got := DiffServiceSpec(base, after)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d fields, want %d:\n%v", len(got), len(tt.want), got)
			}
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("field %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
			for _, f := range got {
				if strings.Contains(f.After, "t0ps3cret") {
					t.Errorf("secret log option shown: %v", f)
				}
			}
		})
	}
}

func TestDiffShowsSecretChangedWithoutValue(t *testing.T) {
	before := manifest.ServiceSpec{Image: "x", Secrets: []manifest.SecretRef{{Name: "db-password", File: "db", Digest: "aaaa"}, {Name: "old", File: "o", Digest: "cc"}}}
	after := manifest.ServiceSpec{Image: "x", Secrets: []manifest.SecretRef{{Name: "db-password", File: "db", Digest: "bbbb"}, {Name: "new", File: "n", Digest: "dd"}}}
	got := DiffServiceSpec(before, after)
	want := []FieldChange{{"secret db-password", "(sensitive)", "changed"}, {"secret new", "(unset)", "added"}, {"secret old", "declared", "removed"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %v, want %v", i, got[i], want[i])
		}
	}
	if d := DiffServiceSpec(before, before); len(d) != 0 {
		t.Errorf("unchanged secrets listed: %v", d)
	}
}
