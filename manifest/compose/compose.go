package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/compose-spec/compose-go/v2/consts"
	"github.com/compose-spec/compose-go/v2/format"
	"github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/compose/discover"
	"github.com/driftless-dev/driftless/manifest/compose/internal/interp"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// composeWorkDir is the directory compose-go is told the files live in. It
// is virtual: compose-go gets the files' content and never reads this
// path, and every relative path is resolved here against the fs.FS.
const composeWorkDir = "/driftless/app"

// composeLoad is one compose app being loaded.
type composeLoad struct {
	fsys     fs.FS
	root     string
	app      string
	opts     load.Options
	display  func(string) string
	errs     *yamlpos.Collector
	warnings *yamlpos.Collector
	ix       *composeIndex
	in       *interp.Interpolator
}

func Load(fsys fs.FS, root, app string, layout discover.Layout, ign *load.IgnoreList, opts load.Options, display func(string) string) (*manifest.App, error) {
	l := &composeLoad{
		fsys: fsys, root: root, app: app, opts: opts, display: display,
		errs: &yamlpos.Collector{}, warnings: &yamlpos.Collector{}, ix: &composeIndex{
			extended: map[string]*composeFile{}, bases: map[*yaml.Node]extendsTarget{},
			includeSeen: map[string]bool{}, stagedExtra: map[string][]byte{}, interp: map[*composeFile]*interp.Interpolator{},
		},
	}
	for _, p := range layout.Files {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("reading compose file %s: %w", display(p), err)
		}
		l.ix.files = append(l.ix.files, parseComposeFile(l.errs, p, display(p), data, policy.BudgetOf(fsys)))
	}
	main := l.ix.files[0]
	for _, p := range layout.Shadowed {
		l.warnings.Add(manifest.Position{File: display(p)}, "", "ignored: %s takes precedence, as in docker compose", main.display)
	}
	if err := checkMixedFormats(l.errs, fsys, root, layout, ign, main.display, display); err != nil {
		return nil, err
	}
	checkComposeCounts(l.errs, l.ix, policy.BudgetOf(fsys).Limits)
	if len(l.errs.Errs) > 0 {
		return nil, l.errs.Sorted()
	}
	if !hasDocument(main) {
		l.errs.Add(manifest.Position{File: main.display, Line: 1}, "", "the compose file is empty: declare services")
		return nil, l.errs.Sorted()
	}
	env := interp.Environment(l.errs, fsys, root, display, opts.Environment, l.opts.ReportEnvRead)
	// compose interpolates ${COMPOSE_PROJECT_NAME} as the project's name,
	// whatever the environment says; the app is the project.
	env[consts.ComposeProjectName] = app
	l.in = &interp.Interpolator{Env: env, Read: l.opts.ReportEnvRead, Errs: l.errs, Warnings: l.warnings}
	// A single compose file is valid to compose-go's schema check exactly
	// when each of its documents is to ours (the same schema, formats and
	// casts; compose-go checks it merged with nothing). Ours reports every
	// error with its position, but costs a second compilation of the
	// schema in every process: with one file it runs only when compose-go
	// refuses, to say where.
	schemaLater := len(l.ix.files) == 1
	l.precheck(!schemaLater)
	if len(l.errs.Errs) > 0 {
		return nil, l.errs.Sorted()
	}
	project, err := runComposeGo(l.ix, l.in, app, l.profiles(), l.relPath)
	if err != nil {
		if schemaLater {
			l.eachDoc(func(f *composeFile, d *yaml.Node) { validateComposeDoc(l.errs, l.ix, f, d, l.inFor(f)) })
			if len(l.errs.Errs) > 0 {
				return nil, l.errs.Sorted()
			}
		}
		l.composeGoError(err)
		return nil, l.errs.Sorted()
	}
	a, jobs := l.mapProject(project)
	// Contexts are read only from a mapping without errors: a refused
	// build: would only be reported twice.
	if err := resolveBuildsIfValid(fsys, root, a, l.errs); err != nil {
		var list manifest.ErrorList
		if !errors.As(err, &list) {
			return nil, err
		}
		l.errs.Errs = append(l.errs.Errs, list...)
	}
	// The policy's and the limits' refusals belong to the same list as the
	// mapping's.
	l.errs.Errs = append(l.errs.Errs, policy.CheckPolicy(a, opts.Policy, opts.Host)...)
	l.errs.Errs = append(l.errs.Errs, policy.CheckLimits(a, opts.Limits)...)
	if len(l.errs.Errs) > 0 {
		return nil, l.errs.Sorted()
	}
	// Secrets are decrypted once the mapping is sound, as for native
	// manifests.
	l.errs.Errs = append(l.errs.Errs, load.ResolveSecrets(fsys, root, a, opts, display)...)
	if len(l.errs.Errs) > 0 {
		return nil, l.errs.Sorted()
	}
	a.TakeJobs(jobs)
	a.Warnings = l.warnings.Sorted()
	if len(a.Warnings) == 0 {
		a.Warnings = nil
	}
	return a, nil
}

// profiles are the load's, or without any, as in docker compose, those
// COMPOSE_PROFILES names in the project's environment (.env, say).
func (l *composeLoad) profiles() []string {
	if len(l.opts.Profiles) > 0 {
		return l.opts.Profiles
	}
	v, _ := l.in.Lookup("COMPOSE_PROFILES")
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// precheck finds, with positions, everything compose-go would stop at
// (with its first error and no position): keys, interpolation, files it
// would read from the host, short syntax, and, with schema, the schema.
// Without schema it still interpolates every document as the schema check
// would, to find the casts compose-go needs.
func (l *composeLoad) precheck(schema bool) {
	l.eachDoc(func(f *composeFile, d *yaml.Node) {
		yamlpos.CheckKeys(l.errs, f.display, d, "", 0)
		l.in.Check(f.display, d, "", 0)
	})
	if len(l.errs.Errs) > 0 {
		return
	}
	l.resolveIncludes()
	if len(l.errs.Errs) > 0 {
		return
	}
	l.resolveExtends()
	if len(l.errs.Errs) > 0 {
		return
	}
	// compose-go reads a whole extended file (short syntax, casts), but
	// checks against the schema only the services merged from it.
	extended := l.ix.extendedFiles()
	l.eachDoc(func(f *composeFile, d *yaml.Node) { checkShortSyntax(l.errs, f, d, l.inFor(f)) })
	for _, f := range extended {
		for _, d := range f.nonEmptyDocs() {
			checkShortSyntax(l.errs, f, d, l.in)
		}
	}
	if len(l.errs.Errs) > 0 {
		return
	}
	for _, f := range extended {
		for _, d := range f.nonEmptyDocs() {
			interpolateComposeDoc(l.errs, f, d, l.in)
		}
	}
	if !schema {
		l.eachDoc(func(f *composeFile, d *yaml.Node) { interpolateComposeDoc(l.errs, f, d, l.inFor(f)) })
		return
	}
	l.eachDoc(func(f *composeFile, d *yaml.Node) { validateComposeDoc(l.errs, l.ix, f, d, l.inFor(f)) })
}

// eachDoc calls fn for every non-empty document, in load order (the
// included files first, once they are read).
func (l *composeLoad) eachDoc(fn func(*composeFile, *yaml.Node)) {
	for _, f := range l.ix.layerFiles() {
		for _, d := range f.docs {
			if d != nil {
				fn(f, d)
			}
		}
	}
}

func hasDocument(f *composeFile) bool {
	for _, d := range f.docs {
		if d != nil {
			return true
		}
	}
	return false
}

// parseComposeFile parses a compose file into yaml.v3 documents for
// positions, reporting syntax errors and documents beyond the limits.
func parseComposeFile(c *yamlpos.Collector, p, display string, data []byte, b *policy.Budget) *composeFile {
	f := &composeFile{path: p, display: display, data: data}
	if !utf8.Valid(data) {
		c.Add(yamlpos.InvalidUTF8(display, data), "", "file is not valid UTF-8")
		return f
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for docs := 1; ; docs++ {
		var n yaml.Node
		err := yamlpos.DecodeNode(dec, &n)
		if errors.Is(err, io.EOF) {
			return f
		}
		if err != nil {
			pos, msg := yamlpos.SyntaxError(display, data, err)
			c.Add(pos, "", "YAML syntax error: %s", msg)
			return f
		}
		if !policy.CheckDocuments(c, display, &n, docs, b.Limits.Documents) || !policy.CheckStructure(c, display, &n, b) {
			return f
		}
		if len(n.Content) == 0 || yamlpos.IsNull(n.Content[0]) {
			f.docs = append(f.docs, nil)
			continue
		}
		root := n.Content[0]
		if root.Kind != yaml.MappingNode {
			c.Add(manifest.Position{File: display, Line: root.Line, Column: root.Column}, "",
				"a compose file must be a mapping of top-level keys (services, networks, volumes, ...), got %s", yamlpos.Describe(root))
			f.docs = append(f.docs, nil)
			continue
		}
		f.docs = append(f.docs, root)
	}
}

// checkShortSyntax parses the short syntax of ports and volumes the way
// compose-go will, so a malformed entry is reported at its position (and
// with the others) rather than as compose-go's first error.
func checkShortSyntax(c *yamlpos.Collector, f *composeFile, doc *yaml.Node, in *interp.Interpolator) {
	_, services := yamlpos.Child(doc, "services")
	services = yamlpos.Deref(services)
	if services == nil || services.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(services.Content); i += 2 {
		base := yamlpos.ChildPath("services", services.Content[i].Value)
		svc := services.Content[i+1]
		check := func(attr string, parse func(string) error) {
			_, list := yamlpos.Child(svc, attr)
			list = yamlpos.Deref(list)
			if list == nil || list.Kind != yaml.SequenceNode {
				return
			}
			for j, e := range list.Content {
				e = yamlpos.Deref(e)
				if e.Kind != yaml.ScalarNode {
					continue
				}
				text, missing, err := in.Substitute(e.Value)
				if err == nil {
					if err = parse(text); err != nil && len(missing) > 0 {
						err = fmt.Errorf("%w (not set: %s; set it in .env or the app's environment)", err, strings.Join(slices.Compact(slices.Sorted(slices.Values(missing))), ", "))
					}
				}
				if err != nil {
					c.Add(manifest.Position{File: f.display, Line: e.Line, Column: e.Column}, yamlpos.IndexPath(base+"."+attr, j), "%v", err)
				}
			}
		}
		check("ports", func(s string) error {
			_, err := types.ParsePortConfig(s)
			return err
		})
		check("volumes", func(s string) error {
			_, err := format.ParseVolume(s)
			return err
		})
	}
}

// checkMixedFormats refuses driftless manifests beside a compose file: an
// app directory has one format. Other YAML (CI configs, docs) is ignored.
func checkMixedFormats(c *yamlpos.Collector, fsys fs.FS, root string, layout discover.Layout, ign *load.IgnoreList, composeName string, display func(string) string) error {
	files, err := load.ManifestFiles(fsys, root, ign)
	if err != nil {
		return fmt.Errorf("reading %s: %w", display(root), err)
	}
	for _, p := range files {
		if slices.Contains(layout.Files, p) {
			continue
		}
		// Only a file naming driftless.dev/ is read as a manifest, and
		// counted: a repository's openapi.yml or pnpm-lock.yaml is not one.
		// One over manifestBytes could not be loaded: it is not scanned.
		if ok, err := load.Mentions(policy.BuildContextFS(fsys), p, []byte("driftless.dev/"), policy.BudgetOf(fsys).Limits.ManifestBytes); err != nil || !ok {
			if err != nil {
				return fmt.Errorf("reading %s: %w", display(p), err)
			}
			continue
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", display(p), err)
		}
		for _, pos := range nativeDocuments(display(p), data) {
			c.Add(pos, "apiVersion", "a driftless manifest beside the compose file %s: an app directory holds either a compose file or driftless manifests, not both; move the manifests to their own app directory, or list this file in .driftlessignore", composeName)
		}
	}
	return nil
}

// nativeDocuments returns where each document of data declares a driftless
// apiVersion. Files that do not parse are not manifests.
func nativeDocuments(file string, data []byte) []manifest.Position {
	if !bytes.Contains(data, []byte("driftless.dev/")) {
		return nil
	}
	var out []manifest.Position
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := yamlpos.DecodeNode(dec, &n); err != nil {
			return out
		}
		if len(n.Content) == 0 {
			continue
		}
		_, v := yamlpos.Child(n.Content[0], "apiVersion")
		if v != nil && v.Kind == yaml.ScalarNode && strings.HasPrefix(v.Value, "driftless.dev/") {
			out = append(out, manifest.Position{File: file, Line: v.Line, Column: v.Column})
		}
	}
}

// runComposeGo loads the project with compose-go, kept away from the host:
// the files are given as content, paths stay relative (ResolvePaths off),
// the environment is the one given, env_file and label_file are not read
// (both are read through the fs.FS afterwards), and the project name
// is the app's. A panic inside compose-go is an error, never a crash.
//
// casts are the interpolation casts that apply to some string of the files
// (found by the schema check, which applies them the same way): giving
// compose-go only these keeps its interpolation from trying all of them on
// every value, with the same result.
func runComposeGo(ix *composeIndex, in *interp.Interpolator, app string, profiles []string, rel func(string) string) (p *types.Project, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("compose-go: %v", r)
		}
	}()
	defer func() {
		if p != nil && in.Read != nil {
			readByComposeGo(p, in.Read)
		}
	}()
	casts := ix.usedCasts(in)
	details := types.ConfigDetails{WorkingDir: composeWorkDir, Environment: in.Env}
	includes := len(ix.included) > 0
	if ix.fileExtends || includes {
		// compose-go reads extended and included files relative to the
		// working directory: the staged copies of the revision's.
		dir, serr := stageExtended(ix, rel)
		if serr != nil {
			return nil, serr
		}
		defer os.RemoveAll(dir)
		details.WorkingDir = dir
		defer func() {
			if err != nil {
				err = errors.New(strings.ReplaceAll(err.Error(), dir+string(os.PathSeparator), ""))
			}
			if p != nil {
				unstage(p, dir)
			}
		}()
	}
	for _, f := range ix.files {
		details.ConfigFiles = append(details.ConfigFiles, types.ConfigFile{
			Filename: path.Join(composeWorkDir, f.path),
			Content:  f.data,
		})
	}
	return loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName(app, true)
		o.ResolvePaths = false
		o.SkipResolveEnvironment = true
		o.SkipResolveLabels = true
		o.SkipConsistencyCheck = true
		o.SkipInclude = !includes
		o.Profiles = append([]string(nil), profiles...)
		o.Interpolate.TypeCastMapping = casts
		if casts == nil {
			o.Interpolate.TypeCastMapping = map[tree.Path]interpolation.Cast{}
		}
		o.Interpolate.Substitute = func(s string, m template.Mapping) (string, error) {
			return template.SubstituteWithOptions(s, m, template.WithoutLogging)
		}
		o.Interpolate.LookupValue = in.Lookup
	})
}

// readByComposeGo reports the variables compose-go reads from the
// environment map itself rather than through the interpolation lookup:
// environment entries without a value and build args without one
// (ResolveEnvironment, Normalize), and the sources of secrets and configs.
// Each keeps its name as a key of the loaded project, so the project names
// them all.
func readByComposeGo(p *types.Project, read func(string)) {
	readEnvAndArgs := func(env types.MappingWithEquals, build *types.BuildConfig) {
		for k := range env {
			read(k)
		}
		if build != nil {
			for k := range build.Args {
				read(k)
			}
		}
	}
	for _, services := range []types.Services{p.Services, p.DisabledServices} {
		for _, s := range services {
			readEnvAndArgs(s.Environment, s.Build)
		}
	}
	for _, jobs := range []types.Jobs{p.Jobs, p.DisabledJobs} {
		for _, j := range jobs {
			readEnvAndArgs(j.Environment, j.Build)
		}
	}
	for _, s := range p.Secrets {
		read(s.Environment)
	}
	for _, c := range p.Configs {
		read(c.Environment)
	}
}

var (
	composeFilePrefix = regexp.MustCompile(`(?:validating |failed to parse )?` + regexp.QuoteMeta(composeWorkDir) + `/(\S+?):? `)
	composePathStart  = regexp.MustCompile(`^(services|networks|volumes|secrets|configs|models|jobs|include|name)(\.[^\s:]+)?`)
	composeServiceRef = regexp.MustCompile(`service "([^"]+)"`)
)

// composeGoError reports an error compose-go returned where it belongs:
// the file it names, the path it starts with, or the service it names.
func (l *composeLoad) composeGoError(err error) {
	msg := err.Error()
	f := l.ix.files[len(l.ix.files)-1]
	if m := composeFilePrefix.FindStringSubmatch(msg); m != nil {
		for _, cf := range l.ix.files {
			if cf.path == m[1] {
				f = cf
			}
		}
		msg = strings.Replace(msg, m[0], "", 1)
	}
	msg = strings.ReplaceAll(msg, composeWorkDir+"/", "")
	if m := composePathStart.FindString(msg); m != "" {
		field, pos := l.locateDotted(m)
		rest := strings.TrimLeft(strings.TrimPrefix(msg, m), ": ")
		l.errs.Add(pos, field, "%s", rest)
		return
	}
	if m := composeServiceRef.FindStringSubmatch(msg); m != nil {
		svc := yamlpos.ChildPath("services", m[1])
		l.errs.Add(l.ix.keyAt(svc), svc, "%s", msg)
		return
	}
	l.errs.Add(manifest.Position{File: f.display, Line: 1}, "", "%s", msg)
}

// locateDotted locates a path written compose's way (services.web.ports.0).
func (l *composeLoad) locateDotted(dotted string) (string, manifest.Position) {
	parts := strings.Split(dotted, ".")
	if len(parts) > 2 && parts[0] == "services" && len(l.ix.bases) > 0 {
		// A field the service inherits is where its base writes it.
		layers := l.ix.serviceLayers(parts[1])
		for i := len(layers) - 1; i >= 0; i-- {
			if field, pos, n := yamlpos.NodePath(layers[i].file.display, layers[i].node, parts[2:]); n != nil {
				return joinField(yamlpos.ChildPath("services", parts[1]), field), pos
			}
		}
	}
	var bestField string
	var best manifest.Position
	bestDepth := -1
	for i := len(l.ix.files) - 1; i >= 0; i-- {
		f := l.ix.files[i]
		for _, d := range f.docs {
			if d == nil {
				continue
			}
			field, pos, n := yamlpos.NodePath(f.display, d, parts)
			depth := 0
			if n != nil {
				depth = len(parts)
			}
			if depth > bestDepth {
				bestField, best, bestDepth = field, pos, depth
			}
		}
	}
	return bestField, best
}

// checkComposeCounts refuses, before compose-go builds the project, more
// services, or networks and volumes, than the limits allow: compose-go
// spends over 100 KiB on each service. A name declared in both the compose
// file and its override counts once. The error is at the first name past
// the limit.
func checkComposeCounts(c *yamlpos.Collector, ix *composeIndex, lim policy.Limits) {
	keys := func(sections ...string) []manifest.Position {
		seen := map[string]bool{}
		var out []manifest.Position
		for _, f := range ix.files {
			for _, d := range f.docs {
				for _, sec := range sections {
					_, m := yamlpos.Child(d, sec)
					if m = yamlpos.Deref(m); m == nil || m.Kind != yaml.MappingNode {
						continue
					}
					for i := 0; i+1 < len(m.Content); i += 2 {
						k := m.Content[i]
						if !seen[sec+"."+k.Value] {
							seen[sec+"."+k.Value] = true
							out = append(out, manifest.Position{File: f.display, Line: k.Line, Column: k.Column})
						}
					}
				}
			}
		}
		return out
	}
	if s := keys("services"); len(s) > lim.Services {
		c.Add(s[lim.Services], "", "the app declares %d services, more than the limit of %d: split the app, or %s", len(s), lim.Services, policy.RaiseAdvice("services"))
	}
	if o := keys("networks", "volumes"); len(o) > lim.Objects {
		c.Add(o[lim.Objects], "", "the app declares %d networks and volumes, more than the limit of %d: %s", len(o), lim.Objects, policy.RaiseAdvice("objects"))
	}
}
