package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// validateSecretRefs checks a service's secrets and envFrom as written;
// the files themselves are read by resolveSecrets.
func validateSecretRefs(r reporter, raw *rawServiceSpec) {
	names := map[string]int{}
	for i, s := range raw.Secrets {
		p := indexPath("spec.secrets", i)
		switch {
		case s.Name == "":
			r.required(p + ".name")
		case !ValidName(s.Name):
			r.errorf(p+".name", "invalid secret name %q: %s", s.Name, nameRule)
		default:
			if j, dup := names[s.Name]; dup {
				r.errorf(p+".name", "secret %q is already declared at spec.secrets[%d]", s.Name, j)
			}
			names[s.Name] = i
		}
		if s.File == "" {
			r.required(p + ".file")
		} else if _, err := secretFilePath(s.File); err != nil {
			r.errorf(p+".file", "%v", err)
		}
		if s.Digest != "" {
			r.errorf(p+".digest", "unknown field: driftless computes it")
		}
	}
	for i, e := range raw.EnvFrom {
		p := indexPath("spec.envFrom", i) + ".secret"
		if e.Secret == "" {
			r.required(p)
		} else if _, ok := names[e.Secret]; !ok {
			r.errorf(p, "secret %q is not declared in spec.secrets: add {name: %s, file: FILE}", e.Secret, e.Secret)
		}
	}
	for i, s := range raw.Secrets {
		if s.Name != "" && !slices.ContainsFunc(raw.EnvFrom, func(e EnvFrom) bool { return e.Secret == s.Name }) {
			r.errorf(indexPath("spec.secrets", i), "secret %q is not used: delivering secrets as files under /run/secrets is not supported yet; add envFrom: [{secret: %s}] to pass it as environment variables", s.Name, s.Name)
		}
	}
}

// secretFilePath is a secret's file relative to the app directory,
// cleaned; it may not leave the directory.
func secretFilePath(file string) (string, error) {
	if path.IsAbs(file) || strings.Contains(file, "\\") {
		return "", fmt.Errorf("%q must be a path relative to the app directory", file)
	}
	p := path.Clean(file)
	if p == ".." || strings.HasPrefix(p, "../") || p == "." {
		return "", fmt.Errorf("%q leaves the app directory: secrets must be files of the app", file)
	}
	return p, nil
}

// resolveSecrets decrypts every secret the app's services reference,
// records the keyed digest of each plaintext in the spec and puts the
// values envFrom asks for in the environment (as secretEnv). Each problem
// is an error located at the secret's declaration, naming the file and
// the reason: the revision is refused and the last good one keeps running.
func resolveSecrets(fsys fs.FS, root string, app *App, opts LoadOptions, display func(string) string) ErrorList {
	var errs ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		values := map[string]map[string]string{}
		for j := range svc.Spec.Secrets {
			ref := &svc.Spec.Secrets[j]
			at := svc.Field(indexPath("secrets", j) + ".file")
			fail := func(format string, args ...any) {
				errs = append(errs, &Error{Pos: at.Pos, Field: at.Field, Msg: fmt.Sprintf(format, args...)})
			}
			rel, err := secretFilePath(ref.File)
			if err != nil {
				continue // validation reported it
			}
			name := path.Join(root, rel)
			data, err := fs.ReadFile(fsys, name)
			if err != nil {
				fail("secret %q: cannot read %s: %v", ref.Name, display(name), unwrapPathError(err))
				continue
			}
			if opts.Decrypt == nil {
				fail("secret %q: %s cannot be decrypted here: no decryption is configured", ref.Name, display(name))
				continue
			}
			plain, err := opts.Decrypt(rel, data)
			if err != nil {
				fail("secret %q: %s: %v; fix the file or the app's keys (decryption.ageKeyFile, SOPS_AGE_KEY_FILE)", ref.Name, display(name), err)
				continue
			}
			vals, err := secretValues(ref.Name, rel, ref.Key, plain)
			if err != nil {
				fail("secret %q: %s: %v", ref.Name, display(name), err)
				continue
			}
			ref.Digest = opts.SecretKey.Digest(string(plain))
			values[ref.Name] = vals
		}
		errs = append(errs, envFromSecrets(svc, values)...)
	}
	return errs
}

// envFromSecrets adds the values of the secrets envFrom names to the
// service's environment, as secret env.
func envFromSecrets(svc *Service, values map[string]map[string]string) ErrorList {
	var errs ErrorList
	for k, e := range svc.Spec.EnvFrom {
		vals, ok := values[e.Secret]
		if !ok {
			continue
		}
		for _, name := range sortedKeys(vals) {
			if _, taken := svc.Spec.Env[name]; taken {
				at := svc.Field(indexPath("envFrom", k))
				errs = append(errs, &Error{Pos: at.Pos, Field: at.Field,
					Msg: fmt.Sprintf("secret %q sets %s, which spec.env (or another secret) sets too: rename one", e.Secret, name)})
				continue
			}
			if svc.Spec.Env == nil {
				svc.Spec.Env = map[string]string{}
			}
			svc.Spec.Env[name] = vals[name]
			svc.Spec.SecretEnv = append(svc.Spec.SecretEnv, name)
		}
	}
	slices.Sort(svc.Spec.SecretEnv)
	return errs
}

// secretValues are the environment variables a decrypted secret gives:
// a single value (binary file, or key set) under the secret's name made a
// variable name, or each top-level key of a dotenv, YAML or JSON file.
func secretValues(secret, file, key string, plain []byte) (map[string]string, error) {
	format := secretFormat(file)
	if format == "binary" {
		if key != "" {
			return nil, fmt.Errorf("key %q: the file is not YAML, JSON or dotenv, so it holds a single value", key)
		}
		return map[string]string{EnvName(secret): string(plain)}, nil
	}
	m, err := parseSecretMap(format, plain)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return m, nil
	}
	v, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("key %q is not in the file (it has: %s)", key, strings.Join(sortedKeys(m), ", "))
	}
	return map[string]string{EnvName(secret): v}, nil
}

// secretFormat is how sops reads a file, by its name.
func secretFormat(file string) string {
	switch path.Ext(file) {
	case ".yaml", ".yml":
		return "yaml"
	case ".json":
		return "json"
	case ".env":
		return "dotenv"
	}
	return "binary"
}

// parseSecretMap reads the top-level keys of a decrypted structured
// secret. Values must be scalars: a nested map has no one environment
// variable to become.
func parseSecretMap(format string, plain []byte) (map[string]string, error) {
	out := map[string]string{}
	if format == "dotenv" {
		for n, line := range strings.Split(string(plain), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok || k == "" || strings.ContainsAny(k, " \t\x00") {
				return nil, fmt.Errorf("line %d of the decrypted file is not KEY=VALUE", n+1)
			}
			out[k] = v
		}
		return out, nil
	}
	var m map[string]any
	var err error
	if format == "json" {
		d := json.NewDecoder(bytes.NewReader(plain))
		d.UseNumber()
		err = d.Decode(&m)
	} else {
		err = yaml.Unmarshal(plain, &m)
	}
	if err != nil {
		// The parser's message may quote the plaintext: do not pass it on.
		return nil, errors.New("the decrypted file is not a " + format + " mapping")
	}
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out[k] = v
		case bool, int, int64, uint64, float64, json.Number:
			out[k] = fmt.Sprint(v)
		case nil:
			out[k] = ""
		default:
			return nil, fmt.Errorf("key %q holds a list or mapping: secrets for the environment need a string, number or boolean", k)
		}
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("key %q cannot be an environment variable name", k)
		}
	}
	return out, nil
}

// EnvName is a secret name as an environment variable: db-password →
// DB_PASSWORD.
func EnvName(secret string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(secret))
}

// unwrapPathError drops fs.PathError's repetition of the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sopsMetadata is how every YAML file `sops` writes ends: a top-level
// sops: mapping with the MAC.
var sopsMetadata = regexp.MustCompile(`(?m)^sops:\s*$[\s\S]*^\s+mac: ENC\[`)

// isSOPSYAML reports whether a YAML file of the app is a SOPS-encrypted
// secret rather than a manifest.
func isSOPSYAML(data []byte) bool {
	return sopsMetadata.Match(data)
}
