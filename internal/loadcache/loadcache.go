// Package loadcache keeps the one-shot CLI from loading an unchanged app
// again: the loaded manifest.App is stored with everything the load read —
// every file and directory listing (the compose files, whether each
// override candidate exists, .env, env_file, the manifests' directory
// walk, build contexts), every environment variable it looked up, set or
// not — and is used again only when each of those still reads the same.
//
// An entry is found by what cannot be re-read: the driftless build, the
// app, the directory, the load options and the secret key. The rest is
// verified on every hit; any difference, or an entry that does not
// decode, is a miss and the app is loaded as usual. Apps whose load
// decrypted anything, or whose model holds secret values, are never
// stored: no plaintext secret reaches the disk.
package loadcache

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// format changes whenever an entry's layout does: old entries then miss.
const format = "driftless-loadcache-1"

// Defaults bounding the cache.
const (
	DefaultPerApp   = 4
	DefaultMaxBytes = 32 << 20
)

// Cache is the load cache in one directory.
type Cache struct {
	// Dir holds the entries (created 0700, files 0600).
	Dir string
	// Build identifies the driftless build: an entry of another build is
	// never read. Empty disables the cache.
	Build string
	// PerApp is how many entries one app keeps (directories, options);
	// 0 is DefaultPerApp.
	PerApp int
	// MaxBytes bounds one entry; a larger model is not stored. 0 is
	// DefaultMaxBytes.
	MaxBytes int
	// Log, if set, says why an entry missed (debug level).
	Log *slog.Logger
}

// Request is one load.
type Request struct {
	Dir, App string
	Opts     load.Options
}

// Outcome says what Load did, for tests and debugging.
type Outcome int

// Outcomes of Load.
const (
	Miss   Outcome = iota // loaded; stored if it could be
	Hit                   // served from the cache
	Skip                  // loaded; not storable (secrets, too large, disabled)
	Failed                // the load failed; nothing stored
)

// Load returns the app dir declares, from the cache when every input
// still reads the same, else loaded with appdir.LoadDirFSWith and
// stored. Errors are the load's own: a cache problem is never one.
func (c *Cache) Load(req Request) (*manifest.App, Outcome, error) {
	if c == nil || c.Build == "" || c.Dir == "" {
		app, err := appdir.LoadDirWith(req.Dir, req.App, req.Opts)
		return app, outcome(Skip, err), err
	}
	key, err := c.key(req)
	if err != nil {
		app, err := appdir.LoadDirWith(req.Dir, req.App, req.Opts)
		return app, outcome(Skip, err), err
	}
	dir := req.Dir
	if dir == "" {
		dir = "."
	}
	if app, ok := c.lookup(key, dir, req); ok {
		// Where host paths land is a fact of the host, not of the files:
		// it is judged again on every hit, as the load judged it.
		if errs := policy.CheckHostPaths(app, req.Opts.Policy, req.Opts.Host); len(errs) > 0 {
			return nil, Failed, errs
		}
		return app, Hit, nil
	}
	rec := newRecorder(os.DirFS(dir))
	opts := req.Opts
	envSeen := map[string]bool{}
	var envOrder []string
	opts.EnvRead = func(name string) {
		if !envSeen[name] {
			envSeen[name] = true
			envOrder = append(envOrder, name)
		}
		if req.Opts.EnvRead != nil {
			req.Opts.EnvRead(name)
		}
	}
	decrypted := false
	if req.Opts.Decrypt != nil {
		opts.Decrypt = func(name string, data []byte) ([]byte, error) {
			decrypted = true
			return req.Opts.Decrypt(name, data)
		}
	}
	app, err := appdir.LoadDirFSWith(rec, dir, req.App, opts)
	if err != nil {
		return app, Failed, err
	}
	if decrypted || holdsSecrets(app) || rec.unstable() {
		return app, Skip, nil
	}
	e := entry{Format: format, Files: rec.facts(), App: app}
	for _, name := range envOrder {
		v, ok := req.Opts.Environment[name]
		e.Env = append(e.Env, envFact{Name: name, Set: ok, Digest: digest([]byte(v))})
	}
	if !c.store(key, req.App, e) {
		return app, Skip, nil
	}
	return app, Miss, nil
}

func outcome(o Outcome, err error) Outcome {
	if err != nil {
		return Failed
	}
	return o
}

// holdsSecrets reports whether the model carries secret material in the
// clear: delivered secret files, or variables from an encrypted env file
// (their values sit in the spec's environment).
func holdsSecrets(a *manifest.App) bool {
	if len(a.SecretData) > 0 {
		return true
	}
	services := slices.Clone(a.Services)
	for _, j := range a.Jobs {
		services = append(services, j.Service) // a job's container may hold them too
	}
	for _, s := range services {
		if len(s.Spec.Secrets) > 0 || len(s.Spec.SecretEnv) > 0 || len(s.Spec.EnvFrom) > 0 {
			return true
		}
	}
	return false
}

// entry is what one file of the cache holds.
type entry struct {
	Format string
	Files  []fileFact
	Env    []envFact
	App    *manifest.App
	// Empties are the paths of the model's empty (not nil) slices and
	// maps, which gob would decode as nil.
	Empties [][]step
}

// decodeEntry decodes an entry and restores its empty lists.
func decodeEntry(data []byte) (entry, error) {
	var e entry
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&e); err != nil {
		return e, err
	}
	if e.Format != format || e.App == nil {
		return e, errors.New("not an entry of this format")
	}
	for _, p := range e.Empties {
		restoreEmpty(reflect.ValueOf(e.App), p)
	}
	return e, nil
}

type envFact struct {
	Name   string
	Set    bool
	Digest string
}

// key names the entry of a request: everything the load depends on that
// is not re-read on a hit.
func (c *Cache) key(req Request) (string, error) {
	abs, err := filepath.Abs(req.Dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	o := req.Opts
	field(format)
	field(c.Build)
	field(req.App)
	// Positions in warnings name files as the directory was written.
	field(req.Dir)
	field(abs)
	field(fmt.Sprintf("%#v", o.Policy))
	field(fmt.Sprintf("%#v", o.Profiles))
	field(fmt.Sprintf("%#v", o.Limits))
	field(fmt.Sprintf("%v/%v/%q/%q", o.AllowPlaintext, o.Decrypt != nil, o.Target, o.RemoteEngine))
	// The key itself never reaches the disk: a digest of it does.
	field(digest(append([]byte("secret-key:"), o.SecretKey...)))
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// path is the entry's file: the app's name first, to bound each app's
// entries.
func (c *Cache) path(key, app string) string {
	return filepath.Join(c.Dir, app+"."+key+".gob")
}

// lookup returns the entry's app when every fact still holds.
func (c *Cache) lookup(key, dir string, req Request) (*manifest.App, bool) {
	data, err := os.ReadFile(c.path(key, req.App))
	if err != nil {
		return nil, false
	}
	e, err := decodeEntry(data)
	if err != nil {
		c.debug("load cache: unreadable entry", "app", req.App, "err", err)
		return nil, false
	}
	for _, f := range e.Env {
		v, ok := req.Opts.Environment[f.Name]
		if ok != f.Set || (ok && digest([]byte(v)) != f.Digest) {
			c.debug("load cache: environment changed", "app", req.App, "variable", f.Name)
			return nil, false
		}
		if req.Opts.EnvRead != nil {
			req.Opts.EnvRead(f.Name)
		}
	}
	fsys := os.DirFS(dir)
	for _, f := range e.Files {
		if !f.holds(fsys) {
			c.debug("load cache: file changed", "app", req.App, "path", f.Path)
			return nil, false
		}
	}
	e.App.SecretKey = req.Opts.SecretKey
	return e.App, true
}

// store writes the entry atomically and keeps the app's newest PerApp
// entries. It reports whether the entry was written: only when the
// entry decodes to exactly the model.
func (c *Cache) store(key, app string, e entry) bool {
	// The key is in the cache key; the model never carries it to disk.
	saved := e.App.SecretKey
	e.App.SecretKey = nil
	findEmpties(reflect.ValueOf(e.App), nil, &e.Empties)
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(e)
	var back entry
	if err == nil {
		back, err = decodeEntry(buf.Bytes())
	}
	if err == nil && !reflect.DeepEqual(back.App, e.App) {
		err = errors.New("the model does not survive encoding")
	}
	e.App.SecretKey = saved
	maxBytes := c.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err != nil || buf.Len() > maxBytes {
		c.debug("load cache: not stored", "app", app, "err", err, "bytes", buf.Len())
		return false
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		c.debug("load cache: not stored", "app", app, "err", err)
		return false
	}
	tmp, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		c.debug("load cache: not stored", "app", app, "err", err)
		return false
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path(key, app))
	}
	if err != nil {
		os.Remove(tmp.Name())
		c.debug("load cache: not stored", "app", app, "err", err)
		return false
	}
	c.prune(app)
	return true
}

// prune removes the app's entries beyond the newest PerApp.
func (c *Cache) prune(app string) {
	per := c.PerApp
	if per <= 0 {
		per = DefaultPerApp
	}
	matches, _ := filepath.Glob(filepath.Join(c.Dir, app+".*.gob"))
	if len(matches) <= per {
		return
	}
	type aged struct {
		path string
		mod  int64
	}
	var list []aged
	for _, m := range matches {
		if info, err := os.Stat(m); err == nil {
			list = append(list, aged{m, info.ModTime().UnixNano()})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].mod > list[j].mod })
	for _, a := range list[min(per, len(list)):] {
		os.Remove(a.path)
	}
}

func (c *Cache) debug(msg string, args ...any) {
	if c.Log != nil {
		c.Log.Debug(msg, args...)
	}
}

// fileFact is what the load saw of one path.
type fileFact struct {
	Path string
	// Err is "" when the path existed, "notexist", or another error's text.
	Err string
	// Type is the type bits of the mode (directory, symlink, ...).
	Type fs.FileMode
	// Content is the digest of the file's bytes, when the load read it.
	Content string
	// Entries are a directory's names and types, when the load listed it.
	Entries []string
	Listed  bool
}

// holds reports whether fsys still reads as the fact says.
func (f fileFact) holds(fsys fs.FS) bool {
	info, err := fs.Stat(fsys, f.Path)
	if errText(err) != f.Err {
		return false
	}
	if err != nil {
		return true
	}
	if info.Mode().Type() != f.Type {
		return false
	}
	if f.Content != "" {
		data, err := fs.ReadFile(fsys, f.Path)
		if err != nil || digest(data) != f.Content {
			return false
		}
	}
	if f.Listed {
		list, err := fs.ReadDir(fsys, f.Path)
		if err != nil || !slices.Equal(entryNames(list), f.Entries) {
			return false
		}
	}
	return true
}

func errText(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return "notexist"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func entryNames(list []fs.DirEntry) []string {
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, e.Name()+"\x00"+e.Type().String())
	}
	slices.Sort(out)
	return out
}

// recorder is an fs.FS that notes what was read through it, from the bytes
// and listings the load itself got (not read again afterwards, when they
// might have changed).
type recorder struct {
	fsys fs.FS
	mu   sync.Mutex
	seen map[string]*fileFact
	// changed: one path read two ways during the load (a file edited
	// while it was read); such a load is not stored.
	changed bool
	// links: the load read a symlink itself (a build context sends its
	// links as they are). Where a link points is not among the facts a
	// hit checks again, so such a load is not stored either.
	links bool
}

func newRecorder(fsys fs.FS) *recorder {
	return &recorder{fsys: fsys, seen: map[string]*fileFact{}}
}

func (r *recorder) fact(p string) *fileFact {
	f, ok := r.seen[p]
	if !ok {
		f = &fileFact{Path: p}
		r.seen[p] = f
	}
	return f
}

// note merges an observation of p; a contradiction marks the load
// unstable.
func (r *recorder) note(p string, obs fileFact) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, known := r.seen[p]
	f := r.fact(p)
	if known && (f.Err != obs.Err || (obs.Err == "" && f.Type != obs.Type)) {
		r.changed = true
	}
	f.Err, f.Type = obs.Err, obs.Type
	if obs.Content != "" {
		if f.Content != "" && f.Content != obs.Content {
			r.changed = true
		}
		f.Content = obs.Content
	}
	if obs.Listed {
		if f.Listed && !slices.Equal(f.Entries, obs.Entries) {
			r.changed = true
		}
		f.Listed, f.Entries = true, obs.Entries
	}
}

func (r *recorder) unstable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed || r.links
}

// ReadLink reads the target of the symlink name, as os.DirFS does: without
// it, fs.ReadLink through the recorder failed ("invalid argument") and a
// build context holding a link was refused.
func (r *recorder) ReadLink(name string) (string, error) {
	r.sawLink()
	return fs.ReadLink(r.fsys, name)
}

// Lstat describes name without following a final symlink.
func (r *recorder) Lstat(name string) (fs.FileInfo, error) {
	r.sawLink()
	return fs.Lstat(r.fsys, name)
}

func (r *recorder) sawLink() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.links = true
}

func (r *recorder) facts() []fileFact {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]fileFact, 0, len(r.seen))
	for _, f := range r.seen {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b fileFact) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Open opens name and records what the load learns from it.
func (r *recorder) Open(name string) (fs.File, error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		r.note(name, fileFact{Err: errText(err)})
		return nil, err
	}
	// Noted at once, not only at Close: a file opened and never closed
	// was still seen to exist.
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r.note(name, fileFact{Type: info.Mode().Type()})
	return &recFile{File: f, r: r, name: name, h: sha256.New(), typ: info.Mode().Type()}, nil
}

// recFile records a file's type, its listing and a digest of its bytes.
type recFile struct {
	fs.File
	r       *recorder
	name    string
	h       hash.Hash
	read    bool
	entries []string
	listed  bool
	typ     fs.FileMode
}

func (f *recFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.h.Write(b[:n])
	f.read = true
	return n, err
}

// ReadDir lists the directory; only a listing of it all (n <= 0), the
// way fs.ReadDir and fs.WalkDir list, is kept as a fact.
func (f *recFile) ReadDir(n int) ([]fs.DirEntry, error) {
	d, ok := f.File.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: f.name, Err: errors.New("not a directory")}
	}
	list, err := d.ReadDir(n)
	if n > 0 {
		f.r.mu.Lock()
		f.r.changed = true // a partial listing cannot be verified
		f.r.mu.Unlock()
	} else if err == nil {
		f.entries, f.listed = entryNames(list), true
	}
	return list, err
}

// Close records what was learnt. A file read only in part (a size limit)
// is read to its end first, so its digest covers the whole file.
func (f *recFile) Close() error {
	obs := fileFact{Listed: f.listed, Entries: f.entries, Type: f.typ}
	if f.read {
		if _, err := io.Copy(f.h, f.File); err == nil {
			obs.Content = hex.EncodeToString(f.h.Sum(nil))
		} else {
			f.r.mu.Lock()
			f.r.changed = true
			f.r.mu.Unlock()
		}
	}
	f.r.note(f.name, obs)
	return f.File.Close()
}

// ExecutableBuildID identifies the running executable: its Go build ID
// (which changes with any change to its code or its build), read from the
// ELF note the Go linker writes; elsewhere, its path, size, modification
// time and inode. "" when neither can be read: the cache is then off.
func ExecutableBuildID() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	if id := elfBuildID(f); id != "" {
		return id
	}
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("file:%s:%d:%d:%v", exe, info.Size(), info.ModTime().UnixNano(), info.Sys())
}

// elfBuildID reads the Go build ID note of an ELF executable.
func elfBuildID(f *os.File) string {
	ef, err := elf.NewFile(f)
	if err != nil {
		return ""
	}
	sec := ef.Section(".note.go.buildid")
	if sec == nil {
		return ""
	}
	data, err := sec.Data()
	// The note: name size, description size, type, "Go\0\0", the ID.
	if err != nil || len(data) < 16 || string(data[12:16]) != "Go\x00\x00" {
		return ""
	}
	n := int(ef.ByteOrder.Uint32(data[4:8]))
	if 16+n > len(data) {
		return ""
	}
	return string(data[16 : 16+n])
}
