package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// Limits bound what one revision may ask of the agent. A commit is
// untrusted input: without them one line (replicas: 9223372036854775807)
// or one large file would take the agent, and every app it runs, down.
// The zero value of a field means its default; see DefaultLimits().
type Limits struct {
	// Replicas is the most replicas one service may ask for.
	Replicas int `json:"replicas,omitempty"`
	// Services is the most services one app may declare.
	Services int `json:"services,omitempty"`
	// Objects is the most networks and volumes one app may declare.
	Objects int `json:"objects,omitempty"`
	// Files is the most files one revision may have read: manifests, .env
	// and env files, and the repository files bind mounts, compose configs
	// and secrets materialize into containers.
	Files int `json:"files,omitempty"`
	// Documents is the most YAML documents one file may hold.
	Documents int `json:"documents,omitempty"`
	// ManifestBytes is the most bytes of manifests (everything that is
	// parsed) one revision may have read. It is what bounds the memory a
	// parse costs: see docs/security.md for the measurement.
	ManifestBytes int64 `json:"manifestBytes,omitempty"`
	// ContentBytes is the most bytes of repository content (copied into
	// containers, never parsed) one revision may have read.
	ContentBytes int64 `json:"contentBytes,omitempty"`
}

// DefaultLimits returns the limits of an app whose configuration sets
// none. ManifestBytes (with bytesPerNode and MaxNesting) is chosen so that
// the worst revisions at the limits parse with a peak heap far below
// 64 MiB with either front end (TestLimitsParseMemory).
func DefaultLimits() Limits {
	return Limits{
		Replicas:      100,
		Services:      200,
		Objects:       200,
		Files:         1000,
		Documents:     1000,
		ManifestBytes: 512 << 10,
		ContentBytes:  16 << 20,
	}
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	pick := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	return Limits{
		Replicas:      int(pick(int64(l.Replicas), int64(d.Replicas))),
		Services:      int(pick(int64(l.Services), int64(d.Services))),
		Objects:       int(pick(int64(l.Objects), int64(d.Objects))),
		Files:         int(pick(int64(l.Files), int64(d.Files))),
		Documents:     int(pick(int64(l.Documents), int64(d.Documents))),
		ManifestBytes: pick(l.ManifestBytes, d.ManifestBytes),
		ContentBytes:  pick(l.ContentBytes, d.ContentBytes),
	}
}

// LimitNames are the names of the limits, as driftless.yaml and --limit
// spell them.
var LimitNames = []string{"replicas", "services", "objects", "files", "documents", "manifestBytes", "contentBytes"}

// Set sets the named limit from its text: a count, or for the byte limits
// a memory quantity such as 4Mi. Zero restores the default.
func (l *Limits) Set(name, value string) error {
	value = strings.TrimSpace(value)
	if strings.HasSuffix(name, "Bytes") {
		n, err := manifest.ParseMemory(value)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		switch name {
		case "manifestBytes":
			l.ManifestBytes = n
			return nil
		case "contentBytes":
			l.ContentBytes = n
			return nil
		}
	}
	counts := map[string]*int{"replicas": &l.Replicas, "services": &l.Services, "objects": &l.Objects, "files": &l.Files, "documents": &l.Documents}
	p, ok := counts[name]
	if !ok {
		return fmt.Errorf("%s: unknown limit: must be one of %s", name, strings.Join(LimitNames, ", "))
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return fmt.Errorf("%s: %q is not a count: write a whole number such as 100 (0 for the default)", name, value)
	}
	*p = n
	return nil
}

// Validate refuses negative limits (Set cannot produce them; a Limits
// built in Go can).
func (l Limits) Validate() error {
	for _, v := range []struct {
		name string
		n    int64
	}{
		{"replicas", int64(l.Replicas)}, {"services", int64(l.Services)}, {"objects", int64(l.Objects)},
		{"files", int64(l.Files)}, {"documents", int64(l.Documents)},
		{"manifestBytes", l.ManifestBytes}, {"contentBytes", l.ContentBytes},
	} {
		if v.n < 0 {
			return fmt.Errorf("limits.%s: must not be negative (0 means the default)", v.name)
		}
	}
	return nil
}

// RaiseAdvice is the advice every limit message ends with.
func RaiseAdvice(name string) string {
	return fmt.Sprintf("if this is intended, raise limits.%s in driftless.yaml (or --limit %s=N)", name, name)
}

// LimitError is a revision over a limit found while reading its files. The
// load stops there: reading on is what the limit is there to prevent.
type LimitError struct {
	Pos   manifest.Position
	Name  string // the limit: "manifestBytes"
	Max   int64
	Found int64 // what the revision asks for, counting this file
	What  string
}

func (e *LimitError) Error() string { return e.AsError().Error() }

func (e *LimitError) AsError() *manifest.Error {
	max, found := strconv.FormatInt(e.Max, 10), strconv.FormatInt(e.Found, 10)
	if strings.HasSuffix(e.Name, "Bytes") {
		max, found = byteCount(e.Max), byteCount(e.Found)
	}
	return &manifest.Error{Pos: e.Pos, Msg: fmt.Sprintf("%s come to %s with this file, more than the limit of %s; refused without reading further: %s",
		e.What, found, max, RaiseAdvice(e.Name))}
}

// byteCount prints n bytes with a binary unit when one fits exactly.
func byteCount(n int64) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%d bytes (%s)", n, manifest.FormatMemory(n))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Budget counts what one load has read against its limits. The reads of a
// revision go through it, so sizes are checked (by stat) before a byte is
// read, and a file cannot grow past its stated size while it is read.
type Budget struct {
	Limits        Limits
	files         int
	manifestBytes int64
	contentBytes  int64
	nodes         int64 // YAML nodes parsed, aliases expanded
}

// Kinds of what a budgeted read is.
const (
	readManifest = iota // parsed: counts against ManifestBytes
	readContent         // copied into containers: counts against ContentBytes
)

// budgetFS is the revision's file system as one kind of reader sees it:
// ReadFile counts against the budget. Both kinds share one budget.
type budgetFS struct {
	fs.FS
	b       *Budget
	kind    int
	display func(string) string
}

func NewBudgetFS(fsys fs.FS, lim Limits, display func(string) string) *budgetFS {
	return &budgetFS{FS: fsys, b: &Budget{Limits: lim.WithDefaults()}, kind: readManifest, display: display}
}

// BuildContextFS returns fsys without the revision's byte budget: a build
// context is sent to the engine, never parsed or mounted, and is bounded on
// its own (MaxBuildContextBytes). The YAML beside a compose file is read
// through it too, scanned in pieces for driftless.dev/ and never parsed.
func BuildContextFS(fsys fs.FS) fs.FS {
	if b, ok := fsys.(*budgetFS); ok {
		return b.FS
	}
	return fsys
}

// ContentFS returns the view of fsys that reads repository content: the
// same budget, counted as content. A plain fs.FS gets a budget of its own
// with the default limits, so no read is unbounded.
func ContentFS(fsys fs.FS) *budgetFS {
	if b, ok := fsys.(*budgetFS); ok {
		return &budgetFS{FS: b.FS, b: b.b, kind: readContent, display: b.display}
	}
	return &budgetFS{FS: fsys, b: &Budget{Limits: DefaultLimits()}, kind: readContent, display: func(p string) string { return p }}
}

// ReadFile reads p if the revision's budget allows it, checking the size
// before reading.
func (f *budgetFS) ReadFile(p string) ([]byte, error) {
	info, err := fs.Stat(f.FS, p)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errors.New("is a directory")}
	}
	b := f.b
	pos := manifest.Position{File: f.display(p)}
	if b.files+1 > b.Limits.Files {
		return nil, &LimitError{Pos: pos, Name: "files", Max: int64(b.Limits.Files), Found: int64(b.files + 1), What: "the files this revision has read"}
	}
	used, max, name, what := &b.manifestBytes, b.Limits.ManifestBytes, "manifestBytes", "the manifests this revision has read"
	if f.kind == readContent {
		used, max, name, what = &b.contentBytes, b.Limits.ContentBytes, "contentBytes", "the repository files this revision mounts"
	}
	size := info.Size()
	if size < 0 || *used+size > max {
		return nil, &LimitError{Pos: pos, Name: name, Max: max, Found: *used + size, What: what}
	}
	file, err := f.FS.Open(p)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	// Read at most one byte more than the room left: a file that grew
	// since its stat is caught without reading it all.
	data, err := io.ReadAll(io.LimitReader(file, max-*used+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max-*used {
		return nil, &LimitError{Pos: pos, Name: name, Max: max, Found: *used + int64(len(data)), What: what}
	}
	b.files++
	*used += int64(len(data))
	return data, nil
}

// LimitErrors turns a LimitError found anywhere in a load into the
// revision's error list, so it is refused like any manifest error.
func LimitErrors(err error) error {
	var le *LimitError
	if errors.As(err, &le) {
		return manifest.ErrorList{le.AsError()}
	}
	return err
}

// CheckLimits refuses what an app asks for beyond lim: replicas per
// service, services, networks and volumes. Each error is located where the
// value is written.
func CheckLimits(a *manifest.App, lim Limits) manifest.ErrorList {
	lim = lim.WithDefaults()
	var errs manifest.ErrorList
	for i := range a.Services {
		s := &a.Services[i]
		if s.Spec.Replicas > lim.Replicas {
			ref := s.Field("replicas")
			errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field, Msg: fmt.Sprintf(
				"%d replicas are more than the limit of %d per service: %s", s.Spec.Replicas, lim.Replicas, RaiseAdvice("replicas"))})
		}
	}
	if n := len(a.Services); n > lim.Services {
		s := a.Services[lim.Services]
		errs = append(errs, &manifest.Error{Pos: s.Source, Msg: fmt.Sprintf(
			"the app declares %d services, more than the limit of %d (this is service %q): split the app, or %s", n, lim.Services, s.Name, RaiseAdvice("services"))})
	}
	if n := len(a.Networks) + len(a.Volumes); n > lim.Objects {
		pos := objectSource(a, lim.Objects)
		errs = append(errs, &manifest.Error{Pos: pos, Msg: fmt.Sprintf(
			"the app declares %d networks and volumes, more than the limit of %d: %s", n, lim.Objects, RaiseAdvice("objects"))})
	}
	return errs
}

// objectSource is where the i-th network or volume (networks first) is
// declared.
func objectSource(a *manifest.App, i int) manifest.Position {
	if i < len(a.Networks) {
		return a.Networks[i].Source
	}
	return a.Volumes[i-len(a.Networks)].Source
}

// CheckDocuments refuses the document beyond lim in a file.
func CheckDocuments(c *yamlpos.Collector, file string, n *yaml.Node, count, lim int) bool {
	if count <= lim {
		return true
	}
	c.Add(manifest.Position{File: file, Line: n.Line, Column: n.Column}, "", "this file holds more than %d YAML documents, the limit; refused without reading further: split it into files, or %s", lim, RaiseAdvice("documents"))
	return false
}

// MaxNesting is how deeply collections may nest in a manifest. No schema
// needs more than a dozen levels; compose-go's cost grows with the square
// of the depth (an 18 KiB file 9000 levels deep allocated 53 GiB).
const MaxNesting = 24

// bytesPerNode is the least room a YAML node takes written out: a revision
// may hold ManifestBytes/bytesPerNode nodes, aliases expanded. It bounds
// what the YAML libraries build (compose-go allocates some 6 KiB per node)
// and so the "billion laughs", where a few lines of aliases expand to
// gigabytes.
const bytesPerNode = 64

// CheckStructure refuses a document nested deeper than MaxNesting, or one
// that brings the revision's YAML nodes (aliases expanded) past what the
// manifest byte limit allows, before any library expands it.
func CheckStructure(c *yamlpos.Collector, file string, doc *yaml.Node, b *Budget) bool {
	if deep := tooDeep(doc, 0); deep != nil {
		c.Add(manifest.Position{File: file, Line: deep.Line, Column: deep.Column}, "",
			"nested more than %d levels deep, the limit: flatten the structure", MaxNesting)
		return false
	}
	max := b.Limits.ManifestBytes / bytesPerNode
	n := expandedSize(doc, map[*yaml.Node]int64{}, max)
	b.nodes += n
	if b.nodes <= max {
		return true
	}
	if at := firstAlias(doc); at != nil {
		c.Add(manifest.Position{File: file, Line: at.Line, Column: at.Column}, "",
			"YAML aliases expand this revision to more than %d values, more than %s of manifests can hold written out; refused without expanding them: use fewer aliases, or %s",
			max, byteCount(b.Limits.ManifestBytes), RaiseAdvice("manifestBytes"))
		return false
	}
	c.Add(manifest.Position{File: file, Line: doc.Line, Column: doc.Column}, "",
		"the revision's manifests hold more than %d values (keys, scalars, lists and mappings), the most %s of manifests may hold; refused without reading further: split the app, or %s",
		max, byteCount(b.Limits.ManifestBytes), RaiseAdvice("manifestBytes"))
	return false
}

// tooDeep returns the first node nested deeper than MaxNesting, or nil.
// yaml.v3 itself stops at depth 10000, so the recursion is bounded.
func tooDeep(n *yaml.Node, depth int) *yaml.Node {
	if depth > MaxNesting {
		return n
	}
	for _, ch := range n.Content {
		if d := tooDeep(ch, depth+1); d != nil {
			return d
		}
	}
	return nil
}

// expandedSize counts the nodes of n with every alias expanded, once per
// distinct node (memo), stopping past max so the count cannot overflow.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int64, max int64) int64 {
	if n == nil {
		return 0
	}
	if v, ok := memo[n]; ok {
		return v
	}
	memo[n] = max + 1 // a cycle through an alias never ends: over the limit
	var size int64 = 1
	if n.Kind == yaml.AliasNode {
		size = expandedSize(n.Alias, memo, max)
	}
	for _, ch := range n.Content {
		size += expandedSize(ch, memo, max)
		if size > max {
			break
		}
	}
	size = min(size, max+1)
	memo[n] = size
	return size
}

func firstAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n
	}
	for _, ch := range n.Content {
		if a := firstAlias(ch); a != nil {
			return a
		}
	}
	return nil
}

// BudgetOf returns the budget of a load's file system; a plain fs.FS gets
// one with the default limits.
func BudgetOf(fsys fs.FS) *Budget {
	if b, ok := fsys.(*budgetFS); ok {
		return b.b
	}
	return &Budget{Limits: DefaultLimits()}
}
