package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// SecretDeliveryProblems checks how a secret's file is delivered: an
// absolute target, numeric owners (a name would have to be looked up in
// the image) and permission bits. By field name.
func SecretDeliveryProblems(s manifest.SecretRef) map[string]string {
	out := map[string]string{}
	if s.Target != "" && (!path.IsAbs(s.Target) || path.Clean(s.Target) != s.Target || s.Target == "/") {
		out["target"] = fmt.Sprintf("%q must be a clean absolute path in the container, such as /run/secrets/%s", s.Target, s.Name)
	}
	for field, v := range map[string]string{"uid": s.UID, "gid": s.GID} {
		if v == "" {
			continue
		}
		if n, err := strconv.ParseUint(v, 10, 31); err != nil || n > 1<<31-1 {
			out[field] = fmt.Sprintf("%q must be a number: the file is owned on the host, where names of the image's users mean nothing", v)
		}
	}
	if s.Mode < 0 || s.Mode > 0o777 {
		out["mode"] = fmt.Sprintf("%#o has bits beyond 0777: give permission bits only, such as 0440", s.Mode)
	}
	return out
}

// SecretTarget is where a secret's file appears in the container.
func SecretTarget(s manifest.SecretRef) string {
	if s.Target != "" {
		return s.Target
	}
	return SecretsMountDir + s.Name
}

// SecretsMountDir is where secrets appear in a container unless a target
// says otherwise: compose's convention.
const SecretsMountDir = "/run/secrets/"

// DefaultSecretMode is a secret file's mode unless one is given: compose's
// default, readable by the container's user whoever it is.
const DefaultSecretMode = 0o444

// SecretFilePath is a secret's file relative to the app directory,
// cleaned; it may not leave the directory.
func SecretFilePath(file string) (string, error) {
	if path.IsAbs(file) || strings.Contains(file, "\\") {
		return "", fmt.Errorf("%q must be a path relative to the app directory", file)
	}
	p := path.Clean(file)
	if p == ".." || strings.HasPrefix(p, "../") || p == "." {
		return "", fmt.Errorf("%q leaves the app directory: secrets must be files of the app", file)
	}
	return p, nil
}

// ErrNotEncrypted is what Options.Decrypt returns (wrapped) for a file
// that carries no SOPS metadata: a plaintext file.
var ErrNotEncrypted = errors.New("not a SOPS-encrypted file")

// plaintextHint says how to fix or allow a plaintext secret file.
const plaintextHint = "encrypt it (sops --encrypt --in-place FILE), or accept it as it is with allowPlaintext: true on the secret (compose: x-driftless: {allowPlaintext: true} on the top-level secret) or decryption: {allowPlaintext: true} for the app in driftless.yaml (--allow-plaintext-secrets on the command line)"

// ResolveSecrets decrypts every secret the app's services reference,
// records the keyed digest of each delivered value in the spec, keeps the
// value in app.SecretData for file delivery and puts the values envFrom
// asks for in the environment (as secretEnv). Each problem is an error
// located at the secret's declaration, naming the file and the reason: the
// revision is refused and the last good one keeps running.
func ResolveSecrets(fsys fs.FS, root string, app *manifest.App, opts Options, display func(string) string) manifest.ErrorList {
	var errs manifest.ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		values := map[string]map[string]string{}
		for j := range svc.Spec.Secrets {
			ref := &svc.Spec.Secrets[j]
			at := svc.Field(yamlpos.IndexPath("secrets", j) + ".file")
			fail := func(format string, args ...any) {
				errs = append(errs, &manifest.Error{Pos: at.Pos, Field: at.Field, Msg: fmt.Sprintf(format, args...)})
			}
			ref.Target = SecretTarget(*ref)
			if ref.Mode == 0 {
				ref.Mode = DefaultSecretMode
			}
			if ref.Env != "" {
				// A value from the environment, which the front end read.
				content, ok := app.SecretData[ref.Digest]
				if !ok {
					fail("secret %q: the value of %s was not read", ref.Name, ref.Env)
					continue
				}
				values[ref.Name] = map[string]string{EnvName(ref.Name): string(content)}
				continue
			}
			forEnv := slices.ContainsFunc(svc.Spec.EnvFrom, func(e manifest.EnvFrom) bool { return e.Secret == ref.Name })
			content, vals, err := openSecret(fsys, root, *ref, forEnv, opts, display)
			var ff *secretFileFault
			if errors.As(err, &ff) {
				// The fault is at a line of the secret's own file.
				errs = append(errs, &manifest.Error{Pos: ff.pos, Field: at.Field, Msg: ff.Error()})
				continue
			}
			if err != nil {
				fail("%v", err)
				continue
			}
			ref.Digest = opts.SecretKey.Digest(string(content))
			if app.SecretData == nil {
				app.SecretData = map[string][]byte{}
			}
			app.SecretData[ref.Digest] = content
			values[ref.Name] = vals
		}
		errs = append(errs, envFromSecrets(svc, values)...)
	}
	return errs
}

// secretFileFault is an error at a line of a secret's file (as
// committed) rather than at the manifest's declaration.
type secretFileFault struct {
	pos manifest.Position
	err error
}

func (f *secretFileFault) Error() string { return f.err.Error() }

func (f *secretFileFault) Unwrap() error { return f.err }

// openSecret reads and decrypts one secret: the content its file delivers
// (the key's value, or the whole decrypted file) and the variables envFrom
// gives (read only when forEnv: a file-only secret may be any text).
func openSecret(fsys fs.FS, root string, ref manifest.SecretRef, forEnv bool, opts Options, display func(string) string) ([]byte, map[string]string, error) {
	rel, err := SecretFilePath(ref.File)
	if err != nil {
		return nil, nil, fmt.Errorf("secret %q: %w", ref.Name, err)
	}
	name := path.Join(root, rel)
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, nil, fmt.Errorf("secret %q: cannot read %s: %v", ref.Name, display(name), unwrapPathError(err))
	}
	plain, decrypted, err := decryptSecret(rel, data, ref.AllowPlaintext || opts.AllowPlaintext, opts)
	var bad *KeyError
	switch {
	case errors.As(err, &bad):
		return nil, nil, &secretFileFault{pos: manifest.Position{File: display(name), Line: bad.Line}, err: fmt.Errorf("secret %q: %w", ref.Name, err)}
	case errors.Is(err, ErrNotEncrypted):
		return nil, nil, fmt.Errorf("secret %q: %s is not SOPS-encrypted, and secrets in Git must be: %s", ref.Name, display(name), plaintextHint)
	case errors.Is(err, errNoDecryption):
		return nil, nil, fmt.Errorf("secret %q: %s cannot be decrypted here: no decryption is configured", ref.Name, display(name))
	case err != nil:
		return nil, nil, fmt.Errorf("secret %q: %s: %v; fix the file or the app's keys (decryption.ageKeyFile, SOPS_AGE_KEY_FILE, GNUPGHOME)", ref.Name, display(name), err)
	}
	if ref.Key == "" && !forEnv {
		return plain, nil, nil
	}
	vals, err := secretValues(ref.Name, rel, ref.Key, plain, decrypted)
	if err != nil {
		if pos, ok := PlainDotenvPos(display(name), decrypted, err); ok {
			return nil, nil, &secretFileFault{pos: pos, err: fmt.Errorf("secret %q: %s", ref.Name, DotenvMessage(err))}
		}
		return nil, nil, fmt.Errorf("secret %q: %s: %v", ref.Name, display(name), err)
	}
	if ref.Key == "" {
		return plain, vals, nil
	}
	return []byte(vals[EnvName(ref.Name)]), vals, nil
}

var errNoDecryption = errors.New("no decryption is configured")

// decryptSecret decrypts a secret's file, or, where plaintext is allowed
// and the file is not encrypted, returns it as it is; decrypted says
// which.
func decryptSecret(rel string, data []byte, allowed bool, opts Options) ([]byte, bool, error) {
	if opts.Decrypt == nil {
		if allowed {
			return data, false, nil
		}
		return nil, false, errNoDecryption
	}
	plain, err := opts.Decrypt(rel, data)
	if errors.Is(err, ErrNotEncrypted) && allowed {
		return data, false, nil
	}
	return plain, err == nil, err
}

// PlainDotenvPos locates an error of a plaintext env file in that file:
// a key set twice, or the line compose-go's parser names. A decrypted
// file's lines are not the committed file's, so it stays at the
// declaration.
func PlainDotenvPos(file string, decrypted bool, err error) (manifest.Position, bool) {
	var bad *KeyError
	switch {
	case decrypted:
		return manifest.Position{}, false
	case errors.As(err, &bad) && bad.Line > 0:
		return manifest.Position{File: file, Line: bad.Line}, true
	case dotenvLine.MatchString(err.Error()):
		return DotenvErrorPos(file, err), true
	}
	return manifest.Position{}, false
}

// envFromSecrets adds the values of the secrets envFrom names to the
// service's environment, as secret env.
func envFromSecrets(svc *manifest.Service, values map[string]map[string]string) manifest.ErrorList {
	var errs manifest.ErrorList
	for k, e := range svc.Spec.EnvFrom {
		vals, ok := values[e.Secret]
		if !ok {
			continue
		}
		for _, name := range sortedKeys(vals) {
			if _, taken := svc.Spec.Env[name]; taken {
				at := svc.Field(yamlpos.IndexPath("envFrom", k))
				errs = append(errs, &manifest.Error{Pos: at.Pos, Field: at.Field,
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
func secretValues(secret, file, key string, plain []byte, decrypted bool) (map[string]string, error) {
	format := secretFormat(file)
	if format == "binary" {
		if key != "" {
			return nil, fmt.Errorf("key %q: the file is not YAML, JSON or dotenv, so it holds a single value", key)
		}
		return map[string]string{EnvName(secret): string(plain)}, nil
	}
	m, err := parseSecretMap(format, plain, decrypted)
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
// variable to become. A dotenv file is read as compose reads an env_file.
func parseSecretMap(format string, plain []byte, decrypted bool) (map[string]string, error) {
	out := map[string]string{}
	if format == "dotenv" {
		vars, setTwice, err := ReadDotenv(plain, nil)
		if err == nil && len(setTwice) > 0 {
			// A secret's keys count once each: see KeyError.
			vars, err = nil, setTwice[0]
		}
		if err != nil && decrypted {
			// The parser's message may quote the plaintext.
			return nil, fmt.Errorf("decrypted, %s", DotenvProblem(err))
		}
		return vars, err
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

// IsSOPSYAML reports whether a YAML file of the app is a SOPS-encrypted
// secret rather than a manifest.
func IsSOPSYAML(data []byte) bool {
	return sopsMetadata.Match(data)
}
