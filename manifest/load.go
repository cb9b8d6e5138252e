package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
	k8syaml "sigs.k8s.io/yaml"
)

// Load reads every *.yaml and *.yml file under root in fsys (recursively, in
// lexical order; hidden files and directories are skipped) and returns the
// app they declare, normalized.
//
// Manifest problems come back as an ErrorList holding every error of the
// revision, sorted by file, line and column; positions name files by their
// path in fsys. A missing root or an unreadable file is a plain error
// (wrapping the fs error). A root without documents yields an empty App.
func Load(fsys fs.FS, root string, app string) (*App, error) {
	return LoadWith(fsys, root, app, LoadOptions{})
}

// LoadOptions are what the app's configuration adds to its files.
type LoadOptions struct {
	// Policy is the host power the app's manifests may use; the zero
	// Policy allows none (see CheckPolicy).
	Policy Policy
	// Host is where host paths are judged (see Host); the zero Host
	// judges them as written.
	Host Host
	// Profiles are the compose profiles to activate; services with other
	// profiles are not part of the app.
	Profiles []string
	// Environment is what compose variables interpolate from, before the
	// app directory's .env file (compose's precedence: these win).
	Environment map[string]string
	// Limits bound what the revision may ask for; zero fields are
	// DefaultLimits().
	Limits Limits
	// SecretKey is the per-agent key secret values are digested with in
	// hashes and displays; the agent and the CLI pass the same one for the
	// same data directory so their hashes agree.
	SecretKey SecretKey
	// Decrypt opens a SOPS-encrypted file of the revision (name is its
	// path in the repository, for the format and messages). nil: an app
	// that references secrets is refused.
	Decrypt func(name string, data []byte) ([]byte, error)
	// AllowPlaintext accepts secret files that are not SOPS-encrypted for
	// the whole app (decryption.allowPlaintext); a secret can also allow
	// it on its own.
	AllowPlaintext bool
	// Target is TargetSwarm for an app deployed as Swarm services: the
	// compose front end then maps the deploy: keys only Swarm carries
	// out, and CheckSwarm refuses what Swarm cannot do. "" is one engine.
	Target string
	// EnvRead, when set, is called with the name of every variable of
	// Environment the load reads, whether it is set or not (a name may
	// come more than once). With the files it read, these are all the
	// loaded App depends on: the CLI's load cache keys on them.
	EnvRead func(name string)
}

// envRead reports a read of the environment variable name.
func (o *LoadOptions) envRead(name string) {
	if o.EnvRead != nil {
		o.EnvRead(name)
	}
}

// LoadWith is Load with the app's options.
func LoadWith(fsys fs.FS, root string, app string, opts LoadOptions) (*App, error) {
	return load(fsys, root, app, opts, func(p string) string { return p })
}

// LoadDir is Load over the directory dir of the local file system. Positions
// name files as dir joined with their path below it, e.g.
// "examples/shop/web.yaml", so they can be opened as printed.
func LoadDir(dir string, app string) (*App, error) {
	return LoadDirWith(dir, app, LoadOptions{})
}

// LoadDirWith is LoadDir with the app's options.
func LoadDirWith(dir string, app string, opts LoadOptions) (*App, error) {
	if dir == "" {
		dir = "."
	}
	return LoadDirFSWith(os.DirFS(dir), dir, app, opts)
}

// LoadDirFSWith is LoadDirWith reading the directory dir through fsys,
// which must be os.DirFS(dir) or a view of it (one that records what the
// load read, say): positions still name files below dir.
func LoadDirFSWith(fsys fs.FS, dir string, app string, opts LoadOptions) (*App, error) {
	if dir == "" {
		dir = "."
	}
	display := func(p string) string {
		switch {
		case dir == ".":
			return p
		case p == ".":
			return dir
		case strings.HasSuffix(dir, "/"):
			return dir + p
		}
		return dir + "/" + p
	}
	return load(fsys, ".", app, opts, display)
}

// load checks the app name and options and bounds the reads of fsys.
func load(fsys fs.FS, root, app string, opts LoadOptions, display func(string) string) (*App, error) {
	if !ValidName(app) {
		return nil, fmt.Errorf("invalid app name %q: %s", app, nameRule)
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	// Every read of the revision goes through its budget; a limit hit on
	// the way refuses the revision like a manifest error.
	fsys = newBudgetFS(fsys, opts.Limits, display)
	a, err := loadFormat(fsys, root, app, opts, display)
	return a, limitErrors(err)
}

// loadFormat dispatches to the app directory's front end: a compose file
// makes it a compose app, anything else is read as driftless manifests.
func loadFormat(fsys fs.FS, root, app string, opts LoadOptions, display func(string) string) (*App, error) {
	ign, err := readIgnoreList(fsys, root, display)
	if err != nil {
		return nil, err
	}
	layout, err := findCompose(fsys, root, ign)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", display(root), err)
	}
	var a *App
	if len(layout.files) > 0 {
		a, err = loadCompose(fsys, root, app, layout, ign, opts, display)
	} else {
		a, err = loadNative(fsys, root, app, ign, opts, display)
	}
	if err != nil {
		return nil, err
	}
	if opts.Target == TargetSwarm {
		RepoFilesAsConfigs(a)
		if errs := CheckSwarm(a); len(errs) > 0 {
			return nil, (&collector{errs: errs}).sorted()
		}
	}
	// The front ends hash without the key; only keyed hashes leave.
	a.Rehash(opts.SecretKey)
	return a, nil
}

// loadNative is the native front end: every manifest under root, parsed
// and checked as a whole, then the host-power policy and the repository
// files its binds mount. All errors come back at once.
func loadNative(fsys fs.FS, root, app string, ign *ignoreList, opts LoadOptions, display func(string) string) (*App, error) {
	files, err := manifestFiles(fsys, root, ign)
	if err != nil {
		return nil, fmt.Errorf("reading manifests under %s: %w", display(root), err)
	}
	c := &collector{}
	parsed := map[string]parsedFile{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("reading manifest %s: %w", display(f), err)
		}
		if isSOPSYAML(data) {
			continue // an encrypted secret, read by resolveSecrets
		}
		fc := &collector{}
		parsed[f] = parsedFile{objs: parseFile(fc, app, display(f), data, budgetOf(fsys)), errs: fc.errs}
	}
	// A YAML file a service names as a secret is a secret (plaintext, or
	// not SOPS's YAML), never a manifest: resolveSecrets judges it.
	secretFiles := referencedSecretFiles(root, parsed)
	var objs []*object
	for _, f := range files {
		if p, ok := parsed[f]; ok && !secretFiles[f] {
			objs = append(objs, p.objs...)
			c.errs = append(c.errs, p.errs...)
		}
	}
	result := assemble(c, app, objs)
	if len(c.errs) > 0 {
		return nil, c.sorted()
	}
	c.errs = append(CheckPolicy(result, opts.Policy, opts.Host), CheckLimits(result, opts.Limits)...)
	c.errs = append(c.errs, resolveSecrets(fsys, root, result, opts, display)...)
	if err := ResolveRepoBinds(fsys, root, result); err != nil {
		var list ErrorList
		if !errors.As(err, &list) {
			return nil, err
		}
		c.errs = append(c.errs, list...)
	}
	if err := ResolveBuilds(fsys, root, result); err != nil {
		var list ErrorList
		if !errors.As(err, &list) {
			return nil, err
		}
		c.errs = append(c.errs, list...)
	}
	if len(c.errs) > 0 {
		return nil, c.sorted()
	}
	return result, nil
}

// parsedFile is what one manifest file gave.
type parsedFile struct {
	objs []*object
	errs ErrorList
}

// referencedSecretFiles are the paths (in fsys) of the files services name
// in spec.secrets.
func referencedSecretFiles(root string, parsed map[string]parsedFile) map[string]bool {
	out := map[string]bool{}
	for _, p := range parsed {
		for _, o := range p.objs {
			if o.serviceRaw == nil {
				continue
			}
			for _, s := range o.serviceRaw.Secrets {
				if rel, err := secretFilePath(s.File); err == nil {
					out[path.Join(root, rel)] = true
				}
			}
		}
	}
	return out
}

// manifestFiles lists the YAML files under root in lexical order, less
// those the app's .driftlessignore excludes.
func manifestFiles(fsys fs.FS, root string, ign *ignoreList) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hidden := p != root && strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden || (p != root && ign.ignored(relTo(root, p), true)) {
				return fs.SkipDir // .git, .github: never manifests
			}
			return nil
		}
		if ign.ignored(relTo(root, p), false) {
			return nil
		}
		if ext := path.Ext(p); !hidden && (ext == ".yaml" || ext == ".yml") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// collector gathers every error of a revision.
type collector struct {
	errs ErrorList
}

func (c *collector) add(pos Position, field, format string, args ...any) {
	c.errs = append(c.errs, &Error{Pos: pos, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (c *collector) sorted() ErrorList {
	l := slices.Clone(c.errs)
	slices.SortStableFunc(l, func(a, b *Error) int {
		if a.Pos.File != b.Pos.File {
			return strings.Compare(a.Pos.File, b.Pos.File)
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		if a.Pos.Column != b.Pos.Column {
			return a.Pos.Column - b.Pos.Column
		}
		if a.Field != b.Field {
			return strings.Compare(a.Field, b.Field)
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}

// parseFile splits a file into documents and parses each one, within the
// revision's limits.
func parseFile(c *collector, app, file string, data []byte, b *budget) []*object {
	if !utf8.Valid(data) {
		c.add(invalidUTF8(file, data), "", "file is not valid UTF-8")
		return nil
	}
	var objs []*object
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for docs := 1; ; docs++ {
		var n yaml.Node
		err := decodeNode(dec, &n)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err == nil && (!checkDocuments(c, file, &n, docs, b.lim.Documents) || !checkStructure(c, file, &n, b)) {
			return objs
		}
		if err != nil {
			// The decoder cannot resync after a syntax error: the rest of
			// the file is unread.
			pos, msg := syntaxError(file, data, err)
			c.add(pos, "", "YAML syntax error: %s", msg)
			return objs
		}
		if len(n.Content) == 0 || isNull(n.Content[0]) {
			continue // empty document, e.g. after a trailing ---
		}
		if o := parseDocument(c, app, file, n.Content[0]); o != nil {
			objs = append(objs, o)
		}
	}
}

// decodeNode guards against panics inside the YAML library: a manifest must
// never crash the agent.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

var (
	yamlLineErr  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAlias = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// parserProblems are the yaml.v3 parser (not scanner) errors: for these the
// library prints a 0-based line.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found undefined tag handle",
}

// syntaxError locates a yaml.v3 error. yaml.v3 errors are plain strings;
// the line, when present, is in the text, and is omitted when it is the
// first line of the file.
func syntaxError(file string, data []byte, err error) (Position, string) {
	msg := err.Error()
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(parserProblems, m[2]) {
			line++
		}
		if tabProblem(m[2]) {
			// yaml.v3 names the line before the tab for some of these.
			for _, l := range []int{line, line + 1} {
				if col := indentTab(data, l); col > 0 {
					return Position{File: file, Line: l, Column: col}, "a tab indents this line; YAML indentation must be spaces"
				}
			}
		}
		return Position{File: file, Line: max(line, 1)}, m[2]
	}
	if m := unknownAlias.FindStringSubmatch(msg); m != nil {
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
			return offsetPos(file, data, i), strings.TrimPrefix(msg, "yaml: ")
		}
	}
	return Position{File: file, Line: 1}, strings.TrimPrefix(msg, "yaml: ")
}

// tabProblem tells the yaml.v3 messages a tab in the indentation causes.
func tabProblem(msg string) bool {
	return strings.Contains(msg, "tab character") || msg == "found character that cannot start any token"
}

// indentTab is the 1-based column of a tab in the indentation of line
// (1-based) of data, or 0: yaml.v3 reports such a tab only as "found
// character that cannot start any token", without a column.
func indentTab(data []byte, line int) int {
	if line < 1 {
		return 0
	}
	lines := bytes.SplitN(data, []byte("\n"), line+1)
	if len(lines) < line {
		return 0
	}
	text := lines[line-1]
	indent := len(text) - len(bytes.TrimLeft(text, " \t"))
	if i := bytes.IndexByte(text[:indent], '\t'); i >= 0 {
		return i + 1
	}
	return 0
}

func invalidUTF8(file string, data []byte) Position {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return offsetPos(file, data, i)
		}
		i += size
	}
	return Position{File: file, Line: 1}
}

func offsetPos(file string, data []byte, off int) Position {
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return Position{File: file, Line: line, Column: col}
}

// parseDocument checks one document's structure against the schema of its
// kind, decodes it strictly and validates it on its own. Cross-document
// checks happen in assemble.
func parseDocument(c *collector, app, file string, root *yaml.Node) *object {
	doc := &docCtx{
		file:   file,
		start:  Position{File: file, Line: root.Line, Column: root.Column},
		pos:    map[string]Position{},
		failed: map[string]bool{},
	}
	kind := peekKind(root)
	var target any
	switch kind {
	case KindService:
		target = &rawServiceDoc{}
	case KindNetwork:
		target = &rawNetworkDoc{}
	case KindVolume:
		target = &rawVolumeDoc{}
	default:
		target = &rawHeader{}
	}
	w := &walker{doc: doc, errs: c}
	val, ok := w.walk(root, reflect.TypeOf(target).Elem(), "")
	if !ok {
		return nil // not a mapping: nothing to decode
	}
	// The walker has already rejected everything malformed; what remains is
	// decoded strictly as a second line of defence.
	js, err := json.Marshal(val)
	if err == nil {
		err = k8syaml.UnmarshalStrict(js, target)
	}
	if err != nil {
		c.add(doc.start, "", "cannot decode document: %v", err)
		return nil
	}
	o := &object{doc: doc, kind: kind}
	var meta *rawMeta
	var apiVersion string
	switch t := target.(type) {
	case *rawServiceDoc:
		apiVersion, meta = t.APIVersion, t.Metadata
		o.serviceRaw = t.Spec
	case *rawNetworkDoc:
		apiVersion, meta = t.APIVersion, t.Metadata
		o.networkRaw = t.Spec
	case *rawVolumeDoc:
		apiVersion, meta = t.APIVersion, t.Metadata
		o.volumeRaw = t.Spec
	case *rawHeader:
		apiVersion, meta = t.APIVersion, t.Metadata
	}
	validateHeader(c, doc, apiVersion, kind, meta, o)
	known := kind == KindService || kind == KindNetwork || kind == KindVolume
	if known {
		validateObject(c, app, o, w)
	}
	// A broken object keeps its name so other documents' references to it
	// do not produce follow-up errors, but its content is unreliable and
	// takes no part in the checks across documents.
	o.broken = w.bad || !known
	return o
}

// validateObject validates a well-formed object on its own, dropping
// errors about fields the walker already reported (or their parents and
// children): they would only echo it.
func validateObject(c *collector, app string, o *object, w *walker) {
	vc := &collector{}
	switch o.kind {
	case KindService:
		validateService(vc, app, o)
	case KindNetwork:
		validateNetwork(vc, o)
	case KindVolume:
		validateVolume(vc, o)
	}
	for _, e := range vc.errs {
		if !w.bad || !o.doc.relatedToFailure(e.Field) {
			c.errs = append(c.errs, e)
		}
	}
}

// peekKind reads the kind before the document is checked, to choose the
// schema to check it against.
func peekKind(root *yaml.Node) string {
	if root.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "kind" && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
			return v.Value
		}
	}
	return ""
}
