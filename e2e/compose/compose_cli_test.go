package compose

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeCLI drives a compose directory through the CLI as a user
// does: validate prints the warnings of unset variables with their
// positions, diff shows the plan, apply converges (dependencies first),
// diff is then empty; a changed repository file and a variable from the
// shell show in the plan and are applied; a compose file named on the
// command line is the app's only one.
func TestComposeCLI(t *testing.T) {
	t.Parallel()
	images := testenv.NewImageSet(t)
	web, db := images.Ref("shop/web:1"), images.Ref("shop/postgres:16")
	images.Ensure(web, db)
	app := testenv.UniqueApp(t)
	port := testenv.FreePorts(t, 1)
	compose := fmt.Sprintf(`services:
  web:
    image: %s
    environment:
      GREETING: ${GREETING:-hello}
      REGION: ${REGION}
    volumes:
      - ./site.conf:/etc/site.conf:ro
    ports: ["127.0.0.1:%d:8080"]
    depends_on:
      db: {condition: service_healthy}
  db:
    image: %s
    healthcheck:
      test: ["CMD", "/driftless", "workload", "probe", "tcp://localhost:5432"]
      interval: 1s
    volumes: [db-data:/var/lib/postgresql/data]
volumes:
  db-data: {}
`, web, port, db)
	cli := newCLIDir(t, app, map[string]string{"compose.yaml": compose, "site.conf": "site v1\n"})
	dir, env, run := cli.dir, cli.env, cli.run
	must := func(out string, code, wantCode int, what string, want ...string) {
		t.Helper()
		if code != wantCode {
			t.Fatalf("%s: exit %d, want %d:\n%s", what, code, wantCode, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", what, w, out)
			}
		}
	}

	out, code := run(env, "validate")
	must(out, code, 0, "validate",
		"warning: compose.yaml:6:15: services.web.environment.REGION: variable REGION is not set: it interpolates to an empty string",
		".: valid: compose app "+app+" with 2 service(s), 1 network(s), 1 volume(s).")

	out, code = run(env, "diff")
	must(out, code, 1, "diff on an empty engine",
		"+ network "+app+"-default", "+ volume "+app+"-db-data", "+ container "+app+"-db-1", "+ container "+app+"-web-1",
		"Plan: 4 to create, 0 to replace, 0 to start, 0 to remove.")

	out, code = run(env, "apply")
	must(out, code, 0, "apply", "db                   1/1 ready", "web                  1/1 ready", "Apply complete")
	if gap := startedAt(t, app+"-web-1").Sub(startedAt(t, app+"-db-1")); gap < 1e9 {
		t.Errorf("web started %s after db, before db's first health check (service_healthy)", gap)
	}
	wantEnv(t, app+"-web-1", map[string]string{"GREETING": "hello", "REGION": ""})
	wantFile(t, app+"-web-1", "/etc/site.conf", "site v1\n")
	httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", port))

	out, code = run(env, "diff")
	must(out, code, 0, "diff after apply", "No changes")

	// A repository file changes: the service that mounts it is replaced.
	if err := os.WriteFile(filepath.Join(dir, "site.conf"), []byte("site v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = run(env, "diff")
	must(out, code, 1, "diff after changing site.conf", "-/+ container "+app+"-web-1", "Plan: 0 to create, 1 to replace")
	if strings.Contains(out, app+"-db-1") {
		t.Errorf("diff after changing site.conf touches db:\n%s", out)
	}
	out, code = run(env, "apply")
	must(out, code, 0, "apply of site.conf", "Apply complete")
	wantFile(t, app+"-web-1", "/etc/site.conf", "site v2\n")

	// The shell's environment is what compose files interpolate from.
	shell := map[string]string{"DRIFTLESS_DATA": env["DRIFTLESS_DATA"], "GREETING": "hi", "REGION": "eu-west-1"}
	out, code = run(shell, "validate")
	must(out, code, 0, "validate with REGION set")
	if strings.Contains(out, "warning:") {
		t.Errorf("validate warns although every variable is set:\n%s", out)
	}
	out, code = run(shell, "diff")
	must(out, code, 1, "diff with GREETING from the shell", "env.GREETING: hello → hi", "env.REGION: \"\" → eu-west-1")
	out, code = run(shell, "apply")
	must(out, code, 0, "apply with GREETING from the shell", "Apply complete")
	wantEnv(t, app+"-web-1", map[string]string{"GREETING": "hi", "REGION": "eu-west-1"})
	out, code = run(shell, "diff")
	must(out, code, 0, "diff after apply with the shell's variables", "No changes")

	// Every run above went through the load cache of the data directory
	// (an edited file and a changed variable were seen all the same); what
	// it read keeps counting: the variables gone again, an override file
	// appearing.
	if entries, _ := filepath.Glob(filepath.Join(env["DRIFTLESS_DATA"], "cache", "load", app+".*.gob")); len(entries) == 0 {
		t.Fatal("no load cache entry under the data directory")
	}
	out, code = run(env, "diff")
	must(out, code, 1, "diff without the shell's variables", "env.GREETING: hi → hello")
	if err := os.WriteFile(filepath.Join(dir, "compose.override.yaml"), []byte("services:\n  web:\n    environment: {GREETING: override}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = run(shell, "diff")
	must(out, code, 1, "diff with an override file", "env.GREETING: hi → override")

	// A compose file named on the command line is the app's one file, as
	// with docker compose -f: neither compose.yaml nor its override.
	cli.write("docker-compose.prod.yml", strings.Replace(compose, "${GREETING:-hello}", "prod", 1))
	out, code = run(shell, "diff", "docker-compose.prod.yml")
	must(out, code, 1, "diff of the named file", "env.GREETING: hi → prod")
	out, code = run(shell, "apply", "docker-compose.prod.yml")
	must(out, code, 0, "apply of the named file", "Apply complete")
	wantEnv(t, app+"-web-1", map[string]string{"GREETING": "prod", "REGION": "eu-west-1"})
	out, code = run(shell, "validate", "docker-compose.prod.yml")
	must(out, code, 0, "validate of the named file", "docker-compose.prod.yml: valid: compose app "+app+" with 2 service(s)")
}
