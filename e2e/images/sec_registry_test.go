package images

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/registry"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// Issue #24 items 7 and 11: registry credentials go only where they
// belong, and an app runs a private image only if its own credentials can
// pull it. The attacker has push access to app b's repository and no
// password (or a wrong one) for the registry that app a pulls a private
// image from; b's commit names a's image.

// secRegistryConfig is driftless.yaml for apps of one repository, each
// with its own login to host: user deployer, the password from
// E2E_PW_<index>.
func secRegistryConfig(t *testing.T, repoURL, host string, apps ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apps:\n")
	for i, app := range apps {
		fmt.Fprintf(&b, "  - name: %s\n    repo: %s\n    allowInsecureTransport: true\n    path: apps/%s\n    interval: 1s\n    registries:\n      - host: %s\n        username: deployer\n        passwordEnv: E2E_PW_%d\n", app, repoURL, app, host, i)
	}
	return writeConfig(t, b.String())
}

// privateImage pushes an image of the test's own (its own image ID) to
// reg as repo:v1 and leaves the engine without the pushed tag, so the
// first app to run it pulls it. It returns the reference and the digest.
// When the test ends the image goes, once the apps' containers are gone.
func privateImage(t *testing.T, reg *registry.Registry, apps ...string) (string, string) {
	t.Helper()
	local := variantImage(t, testenv.WorkloadImage(t, "v1"), "driftless-e2e-"+apps[0]+":private", "IMAGE_GEN=private-"+apps[0])
	id := imageID(t, local)
	t.Cleanup(func() {
		for _, app := range apps {
			testenv.RemoveApp(t, app)
		}
		testenv.DockerQuiet(t, "image", "rm", "--force", id)
	})
	ref, digest := reg.Push(t, local, pushedRepo(apps[0], "web")+":v1")
	reg.RemoveLocal(t, ref)
	return ref, digest
}

// waitPullRefused waits until app's status reports the authentication
// failure want (and every detail in also), and returns the status.
func waitPullRefused(t *testing.T, agent *testenv.Agent, app, want string, also ...string) status.AppStatus {
	t.Helper()
	return testenv.WaitApp(t, agent, 90*time.Second, "the pull access refusal reported", statusOf(app), func(st status.AppStatus) bool {
		b, _ := json.Marshal(st)
		if st.Health != drift.HealthDegraded || !strings.Contains(string(b), want) {
			return false
		}
		for _, s := range also {
			if !strings.Contains(string(b), s) {
				return false
			}
		}
		return true
	})
}

// TestSecPrivateImageNeedsOwnCredentials: app a (the right password)
// pulls a private image from a real registry. App b, with a wrong
// password, names the same image: the engine has it, but b is refused
// with a pull's authentication failure and no container of b is made.
// With the right password b runs it.
func TestSecPrivateImageNeedsOwnCredentials(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.Start(t, "deployer", "right-pass")
	a, b := testenv.UniqueApp(t), testenv.UniqueApp(t)
	ref, _ := privateImage(t, reg, a, b)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+a+"/web.yaml", testenv.WebManifest(ref, 1, "a"))
	repo.WriteFile("apps/"+b+"/web.yaml", testenv.WebManifest(ref, 0, "b"))
	first := repo.Commit("a runs the private image")
	cfg := secRegistryConfig(t, repo.URL(server), reg.Host, a, b)
	data := t.TempDir()
	env := func(passwordB string) []string {
		return append(agentEnv(t.TempDir()), "E2E_PW_0=right-pass", "E2E_PW_1="+passwordB)
	}
	agent := testenv.StartAgentEnv(t, env("wrong-pass"), data, "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "a pulled and runs the private image", statusOf(a), convergedOn(first, 1))

	repo.WriteFile("apps/"+b+"/web.yaml", testenv.WebManifest(ref, 1, "b"))
	second := repo.Commit("b names a's private image")
	want := fmt.Sprintf("image %s could not be pulled from registry %s: authentication failed (401/denied): check the credentials for %s", ref, reg.Host, reg.Host)
	st := waitPullRefused(t, agent, b, want, "another app pulled it")
	t.Logf("b's status: %s", st.Message)
	if cs := testenv.DockerContainers(t, b); len(cs) != 0 {
		t.Errorf("b has containers %+v, want none", cs)
	}

	agent.Stop(t)
	agent = testenv.StartAgentEnv(t, env("right-pass"), data, "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "b with the right password runs it", statusOf(b), convergedOn(second, 1))
}

// TestSecRegistryTokenPerCredential: behind token auth, app a's tag
// checks (imageUpdate) keep a bearer token for a's credentials. App b,
// with a wrong password, names a's image: a's token does not answer b's
// check, so b is refused and no container of b is made.
func TestSecRegistryTokenPerCredential(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.Start(t, "deployer", "right-pass")
	front := reg.StartTokenFront(t, "")
	a, b := testenv.UniqueApp(t), testenv.UniqueApp(t)
	pushed, digest := privateImage(t, reg, a, b)
	ref := front.Host + strings.TrimPrefix(pushed, reg.Host)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	followed := strings.Replace(testenv.WebManifest(ref, 1, "a"), "spec:\n", "spec:\n  imageUpdate: {interval: 1s}\n", 1)
	repo.WriteFile("apps/"+a+"/web.yaml", followed)
	repo.WriteFile("apps/"+b+"/web.yaml", testenv.WebManifest(ref, 0, "b"))
	first := repo.Commit("a follows the private image's tag")
	cfg := secRegistryConfig(t, repo.URL(server), front.Host, a, b)
	agent := testenv.StartAgentEnv(t, append(agentEnv(t.TempDir()), "E2E_PW_0=right-pass", "E2E_PW_1=wrong-pass"), t.TempDir(), "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "a pulled and follows the private image", statusOf(a), func(st status.AppStatus) bool {
		return convergedOn(first, 1)(st) && strings.Contains(st.Services[0].Image, "@sha256:")
	})
	if !slices.ContainsFunc(front.Requests(), func(r registry.TokenRequest) bool { return r.UserAgent == "driftless" && r.Credentials }) {
		t.Fatalf("a's tag check got no token with its credentials: %+v", front.Requests())
	}

	// a runs the tag pinned to its digest, which is what the engine
	// holds (a pull by digest makes no tag): b names that.
	pinned := ref + "@" + digest
	repo.WriteFile("apps/"+b+"/web.yaml", testenv.WebManifest(pinned, 1, "b"))
	repo.Commit("b names a's private image")
	want := fmt.Sprintf("image %s could not be pulled from registry %s: authentication failed (401/denied)", pinned, front.Host)
	st := waitPullRefused(t, agent, b, want, "another app pulled it")
	t.Logf("b's status: %s", st.Message)
	if cs := testenv.DockerContainers(t, b); len(cs) != 0 {
		t.Errorf("b has containers %+v, want none", cs)
	}
}

// TestSecRegistryRealmOnAnotherHost: the registry's token server is on
// another address (127.0.0.2). The engine pulls a's image as Docker does
// (sending the credentials there). driftless's own requests to that
// token server carry no credentials: b, with the right password, cannot
// confirm it may pull a's image, is refused with the reason, and no
// container of b is made.
func TestSecRegistryRealmOnAnotherHost(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.Start(t, "deployer", "right-pass")
	front := reg.StartTokenFront(t, "127.0.0.2")
	a, b := testenv.UniqueApp(t), testenv.UniqueApp(t)
	pushed, _ := privateImage(t, reg, a, b)
	ref := front.Host + strings.TrimPrefix(pushed, reg.Host)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+a+"/web.yaml", testenv.WebManifest(ref, 1, "a"))
	repo.WriteFile("apps/"+b+"/web.yaml", testenv.WebManifest(ref, 0, "b"))
	first := repo.Commit("a runs the private image")
	cfg := secRegistryConfig(t, repo.URL(server), front.Host, a, b)
	agent := testenv.StartAgentEnv(t, append(agentEnv(t.TempDir()), "E2E_PW_0=right-pass", "E2E_PW_1=right-pass"), t.TempDir(), "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "the engine pulled a's image", statusOf(a), convergedOn(first, 1))

	repo.WriteFile("apps/"+b+"/web.yaml", testenv.WebManifest(ref, 1, "b"))
	repo.Commit("b names a's private image")
	want := fmt.Sprintf("image %s could not be pulled from registry %s: authentication failed (401/denied)", ref, front.Host)
	st := waitPullRefused(t, agent, b, want, "no credentials were sent to the token server "+front.Realm, "on another host than the registry "+front.Host)
	t.Logf("b's status: %s", st.Message)
	if cs := testenv.DockerContainers(t, b); len(cs) != 0 {
		t.Errorf("b has containers %+v, want none", cs)
	}
	var ours int
	for _, r := range front.Requests() {
		if r.UserAgent != "driftless" {
			continue // the engine's, which sends credentials to any realm
		}
		ours++
		if r.Credentials {
			t.Errorf("driftless sent credentials to the token server on another host: %+v", r)
		}
	}
	if ours == 0 {
		t.Errorf("driftless never asked the token server (anonymously): %+v", front.Requests())
	}
}
