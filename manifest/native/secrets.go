package native

import (
	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// validateSecretRefs checks a service's secrets and envFrom as written;
// the files themselves are read by resolveSecrets.
func validateSecretRefs(r yamlpos.Reporter, raw *rawServiceSpec) {
	names := map[string]int{}
	targets := map[string]int{}
	for i, s := range raw.Secrets {
		p := yamlpos.IndexPath("spec.secrets", i)
		switch {
		case s.Name == "":
			r.Required(p + ".name")
		case !manifest.ValidObjectName(s.Name):
			r.Errorf(p+".name", "invalid secret name %q: %s", s.Name, manifest.ObjectNameRule)
		default:
			if j, dup := names[s.Name]; dup {
				r.Errorf(p+".name", "secret %q is already declared at spec.secrets[%d]", s.Name, j)
			}
			names[s.Name] = i
		}
		if s.File == "" {
			r.Required(p + ".file")
		} else if _, err := load.SecretFilePath(s.File); err != nil {
			r.Errorf(p+".file", "%v", err)
		}
		if s.Digest != "" {
			r.Errorf(p+".digest", "unknown field: driftless computes it")
		}
		for field, msg := range load.SecretDeliveryProblems(s) {
			r.Errorf(p+"."+field, "%s", msg)
		}
		if t := load.SecretTarget(s); s.Name != "" {
			if j, dup := targets[t]; dup {
				r.Errorf(p+".target", "%s is already the target of spec.secrets[%d]", t, j)
			}
			targets[t] = i
		}
	}
	for i, e := range raw.EnvFrom {
		p := yamlpos.IndexPath("spec.envFrom", i) + ".secret"
		if e.Secret == "" {
			r.Required(p)
		} else if _, ok := names[e.Secret]; !ok {
			r.Errorf(p, "secret %q is not declared in spec.secrets: add {name: %s, file: FILE}", e.Secret, e.Secret)
		}
	}
}
