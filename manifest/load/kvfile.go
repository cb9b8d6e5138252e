package load

import (
	"bytes"
	"errors"
	"io/fs"
	"path"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// KVFile is a KEY=VALUE file a compose service names (an env_file or a
// label_file), read from the revision as compose reads it from disk.
type KVFile struct {
	Kind     string // "env file" or "label file", for messages
	Path     string // as written, relative to the app directory
	Required bool   // false: a missing file is skipped (env_file's required: false)
	Missing  string // what a refusal of a missing file tells the user to do
	Format   string // env_file's format: only the default (dotenv) is read
	// Decrypt opens a SOPS-encrypted file with Options.Decrypt (env
	// files); its variables are then secret.
	Decrypt bool
	Pos     manifest.Position // where the file is named
	Field   string
}

// KVFileRead is what ReadKVFile found: the variables (nil when refused or
// skipped), whether they came from an encrypted file, and the refusals and
// warnings, each at its position.
type KVFileRead struct {
	Vars      map[string]string
	Encrypted bool
	Errs      yamlpos.Collector
	Warnings  yamlpos.Collector
}

// ReadKVFile reads f from fsys, whose app directory is root; display
// turns a path of fsys into the one messages print. lookup resolves ${VAR}
// in the file (see ReadDotenv). A key set twice is refused in a decrypted
// file (see KeyError) and warned about in a plain one.
func ReadKVFile(fsys fs.FS, root string, display func(string) string, opts Options, f KVFile, lookup func(string) (string, bool)) *KVFileRead {
	r := &KVFileRead{}
	data, p, ok := r.read(fsys, root, f)
	if !ok {
		return r
	}
	if f.Format != "" {
		r.Errs.Add(f.Pos, f.Field, "%s format %q is not supported", f.Kind, f.Format)
		return r
	}
	shown := display(path.Join(root, p))
	if f.Decrypt {
		if data, ok = r.decrypt(opts.Decrypt, shown, p, f, data); !ok {
			return r
		}
	}
	vars, setTwice, err := ReadDotenv(data, lookup)
	if err == nil && len(setTwice) > 0 && r.Encrypted {
		err = setTwice[0]
	}
	switch {
	case err != nil && r.Encrypted:
		// A decrypted file's lines are not the committed file's, and
		// the parser's message may quote the plaintext.
		r.Errs.Add(f.Pos, f.Field, "%s %q, decrypted: %s", f.Kind, f.Path, DotenvProblem(err))
		return r
	case err != nil:
		r.Errs.Add(f.posOf(shown, err), f.Field, "%s", DotenvMessage(err))
		return r
	}
	for _, bad := range setTwice {
		r.Warnings.Add(f.posOf(shown, bad), f.Field, "key %q is set twice (lines %d and %d): the later value counts, as in compose", bad.Key, bad.First, bad.Line)
	}
	r.Vars = vars
	return r
}

// posOf is the line of the plain file shown that err names, or where the
// file is named when err names none.
func (f KVFile) posOf(shown string, err error) manifest.Position {
	if pos, ok := PlainDotenvPos(shown, false, err); ok {
		return pos
	}
	return f.Pos
}

// read reads the file's bytes and its path in the revision.
func (r *KVFileRead) read(fsys fs.FS, root string, f KVFile) ([]byte, string, bool) {
	if path.IsAbs(f.Path) {
		r.Errs.Add(f.Pos, f.Field, "%q: %ss are read from the revision, so the path must be relative to the app directory", f.Path, f.Kind)
		return nil, "", false
	}
	p, err := manifest.CleanRepoPath(f.Path)
	if err != nil {
		r.Errs.Add(f.Pos, f.Field, "%s %v", f.Kind, err)
		return nil, "", false
	}
	data, err := fs.ReadFile(fsys, path.Join(root, p))
	var limit *policy.LimitError
	switch {
	case errors.Is(err, fs.ErrNotExist) && !f.Required:
		return nil, "", false
	case errors.Is(err, fs.ErrNotExist):
		r.Errs.Add(f.Pos, f.Field, "%s %q does not exist in the repository: %s", f.Kind, f.Path, f.Missing)
		return nil, "", false
	case errors.As(err, &limit):
		r.Errs.Add(f.Pos, f.Field, "%s %q: %s", f.Kind, f.Path, limit.AsError().Msg)
		return nil, "", false
	case err != nil:
		r.Errs.Add(f.Pos, f.Field, "cannot read %s %q: %v", f.Kind, f.Path, err)
		return nil, "", false
	}
	return data, p, true
}

// decrypt opens a SOPS-encrypted file; a plaintext one is returned as it
// is (env files are plain configuration in compose).
func (r *KVFileRead) decrypt(decrypt func(string, []byte) ([]byte, error), shown, p string, f KVFile, data []byte) ([]byte, bool) {
	if decrypt == nil {
		if bytes.Contains(data, []byte("\nsops_mac=")) {
			r.Errs.Add(f.Pos, f.Field, "%s %q is SOPS-encrypted and cannot be decrypted here: no decryption is configured", f.Kind, f.Path)
			return nil, false
		}
		return data, true
	}
	plain, err := decrypt(p, data)
	var bad *KeyError
	switch {
	case errors.Is(err, ErrNotEncrypted):
		return data, true
	case errors.As(err, &bad):
		r.Errs.Add(manifest.Position{File: shown, Line: bad.Line}, f.Field, "%s %q: %v", f.Kind, f.Path, err)
		return nil, false
	case err != nil:
		r.Errs.Add(f.Pos, f.Field, "%s %q: %v; fix the file or the app's keys (decryption.ageKeyFile, SOPS_AGE_KEY_FILE, GNUPGHOME)", f.Kind, f.Path, err)
		return nil, false
	}
	r.Encrypted = true
	return plain, true
}
