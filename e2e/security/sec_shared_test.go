package security

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// One app cannot reach another app's objects (#24, item 2): someone who
// can push to app shop's path declares app blog's volume as external and
// mounts it. The agent refuses the revision before anything of it is
// created, `driftless diff` and `apply` refuse it the same way, and only
// the app's `shared:` (--shared-volume) lets it through. An external
// network that no driftless app owns (a reverse proxy's) keeps working.

// composeMounting is a compose file whose web mounts the volume declared
// by volumes (the lines under "media:") and joins the external network
// proxy.
func composeMounting(image, proxy, media string) string {
	s := `services:
  web:
    image: ` + image + `
    networks: [proxy]
`
	if media != "" {
		s += "    volumes: [media:/data]\n"
	}
	s += `networks:
  proxy:
    external: true
    name: ` + proxy + "\n"
	if media != "" {
		s += "volumes:\n  media:\n" + media
	}
	return s
}

// mountedBy lists the containers that mount volume name.
func mountedBy(t *testing.T, name string) []string {
	t.Helper()
	names := strings.Fields(testenv.Docker(t, "ps", "-a", "--filter", "volume="+name, "--format", "{{.Names}}"))
	slices.Sort(names)
	return names
}

func TestSecOtherAppsVolumeIsRefused(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	// Clean-ups run last first: the apps that mount blog's volume go
	// before it, the proxy network after every app.
	proxy := "proxy-" + testenv.RandHex(4)
	testenv.Docker(t, "network", "create", proxy) // a reverse proxy's network: no driftless label
	t.Cleanup(func() { _, _ = testenv.DockerTry("network", "rm", proxy) })
	blog := testenv.UniqueApp(t)
	shop := testenv.UniqueApp(t)
	media := blog + "-media"

	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+blog+"/compose.yaml", composeMounting(image, proxy, "    {}\n"))
	repo.WriteFile("apps/"+shop+"/compose.yaml", composeMounting(image, proxy, ""))
	first := repo.Commit("blog with its media, shop behind the proxy")
	agent := testenv.StartConfigAgent(t, []testenv.ComposeAppConfig{
		{Name: blog, Repo: repo.URL(server.URL), Branch: "main", Path: "apps/" + blog, Interval: "1s"},
		{Name: shop, Repo: repo.URL(server.URL), Branch: "main", Path: "apps/" + shop, Interval: "1s"},
	})
	one := map[string]int{"web": 1}
	testenv.WaitAppStatus(t, agent, blog, 90*time.Second, "blog deployed", testenv.ConvergedServices(first, one))
	testenv.WaitAppStatus(t, agent, shop, 90*time.Second, "shop deployed on the proxy's network", testenv.ConvergedServices(first, one))
	if got := testenv.Docker(t, "volume", "inspect", "--format", `{{index .Labels "`+drift.LabelApp+`"}}`, media); got != blog {
		t.Fatalf("volume %s is labelled app %q, want %s", media, got, blog)
	}
	running := testenv.ServiceContainers(t, shop)

	// The attack: shop's web mounts blog's volume.
	attack := composeMounting(image, proxy, "    external: true\n    name: "+media+"\n")
	repo.WriteFile("apps/"+shop+"/compose.yaml", attack)
	bad := repo.Commit("shop: mount blog's media")
	st := testenv.WaitAppStatus(t, agent, shop, 60*time.Second, "the revision refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == bad
	})
	at := fmt.Sprintf("apps/%s/compose.yaml:11:3: ", shop)
	wants := []string{
		at + "external volume " + media + " belongs to app " + blog,
		"`shared: {volumes: [" + media + "]}` in driftless.yaml",
		"still running " + first[:7],
	}
	for _, want := range wants {
		if !strings.Contains(st.Message, want) {
			t.Errorf("status message %q lacks %q", st.Message, want)
		}
	}
	if es := testenv.History(t, agent.Client(), shop, string(status.KindRefused)); len(es) == 0 || es[0].Revision.SHA != bad || !strings.Contains(es[0].Summary, wants[0]) {
		t.Errorf("refused history = %+v, want %s saying %q", es, bad[:7], wants[0])
	}
	time.Sleep(3 * time.Second) // a few more polls
	if got := testenv.ServiceContainers(t, shop); fmt.Sprint(got) != fmt.Sprint(running) {
		t.Errorf("shop's containers changed after the refusal: before %v, after %v", running, got)
	}
	if got := mountedBy(t, media); !slices.Equal(got, []string{blog + "-web-1"}) {
		t.Fatalf("%s is mounted by %v, want only %s-web-1", media, got, blog)
	}

	// The CLI refuses it the same way, as a third app.
	cli := testenv.UniqueApp(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(attack), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	cliWant := "compose.yaml:11:3: external volume " + media + " belongs to app " + blog
	for _, cmd := range []struct {
		args []string
		code int
	}{{[]string{"diff"}, 2}, {[]string{"apply", "--ready-timeout", "60s"}, 1}} {
		out, code := testenv.RunDriftless(t, ctx, dir, nil, append(cmd.args, "--app", cli, "--data", data)...)
		if code != cmd.code || !strings.Contains(out, "revision refused: the revision uses another app's objects: "+cliWant) || !strings.Contains(out, "`--shared-volume "+media+"`") {
			t.Errorf("driftless %s: exit %d, want %d and the refusal %q:\n%s", cmd.args[0], code, cmd.code, cliWant, out)
		}
	}
	if names := testenv.DockerNames(t, cli); len(names) != 0 {
		t.Fatalf("the refused CLI apply created %v", names)
	}
	// Shared by the host's owner, it is mounted.
	out, code := testenv.RunDriftless(t, ctx, dir, nil, "apply", "--app", cli, "--data", data, "--ready-timeout", "60s", "--shared-volume", media)
	if code != 0 {
		t.Fatalf("apply --shared-volume %s: exit %d:\n%s", media, code, out)
	}
	want := []string{blog + "-web-1", cli + "-web-1"}
	slices.Sort(want)
	if got := mountedBy(t, media); !slices.Equal(got, want) {
		t.Fatalf("%s is mounted by %v, want %s-web-1 and %s-web-1", media, got, blog, cli)
	}
}
