package native

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// Load is the native front end: every manifest under root, parsed
// and checked as a whole, then the host-power policy and the repository
// files its binds mount. All errors come back at once.
func Load(fsys fs.FS, root, app string, ign *load.IgnoreList, opts load.Options, display func(string) string) (*manifest.App, error) {
	files, err := load.ManifestFiles(fsys, root, ign)
	if err != nil {
		return nil, fmt.Errorf("reading manifests under %s: %w", display(root), err)
	}
	c := &yamlpos.Collector{}
	parsed := map[string]parsedFile{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("reading manifest %s: %w", display(f), err)
		}
		if load.IsSOPSYAML(data) {
			continue // an encrypted secret, read by resolveSecrets
		}
		fc := &yamlpos.Collector{}
		parsed[f] = parsedFile{objs: parseFile(fc, app, display(f), data, policy.BudgetOf(fsys)), errs: fc.Errs}
	}
	// A YAML file a service names as a secret is a secret (plaintext, or
	// not SOPS's YAML), never a manifest: resolveSecrets judges it.
	secretFiles := referencedSecretFiles(root, parsed)
	var objs []*object
	for _, f := range files {
		if p, ok := parsed[f]; ok && !secretFiles[f] {
			objs = append(objs, p.objs...)
			c.Errs = append(c.Errs, p.errs...)
		}
	}
	result := assemble(c, app, objs)
	if len(c.Errs) > 0 {
		return nil, c.Sorted()
	}
	// Jobs' containers are judged and resolved as services are.
	var fatal error
	result.WithJobServices(func(a *manifest.App) { fatal = resolve(c, fsys, root, a, opts, display) })
	if fatal != nil {
		return nil, fatal
	}
	if len(c.Errs) > 0 {
		return nil, c.Sorted()
	}
	return result, nil
}

// resolve applies the policy and limits and reads what the manifests name
// beside themselves, adding the errors to c; an error that is not the
// manifests' fault comes back.
func resolve(c *yamlpos.Collector, fsys fs.FS, root string, result *manifest.App, opts load.Options, display func(string) string) error {
	c.Errs = append(policy.CheckPolicy(result, opts.Policy, opts.Host), policy.CheckLimits(result, opts.Limits)...)
	c.Errs = append(c.Errs, load.ResolveSecrets(fsys, root, result, opts, display)...)
	if err := load.ResolveRepoBinds(fsys, root, result); err != nil {
		var list manifest.ErrorList
		if !errors.As(err, &list) {
			return err
		}
		c.Errs = append(c.Errs, list...)
	}
	if err := load.ResolveBuilds(fsys, root, result); err != nil {
		var list manifest.ErrorList
		if !errors.As(err, &list) {
			return err
		}
		c.Errs = append(c.Errs, list...)
	}
	return nil
}

// parsedFile is what one manifest file gave.
type parsedFile struct {
	objs []*object
	errs manifest.ErrorList
}

// referencedSecretFiles are the paths (in fsys) of the files services name
// in spec.secrets.
func referencedSecretFiles(root string, parsed map[string]parsedFile) map[string]bool {
	out := map[string]bool{}
	for _, p := range parsed {
		for _, o := range p.objs {
			raw := o.serviceRaw
			if o.jobRaw != nil {
				raw = &o.jobRaw.rawServiceSpec
			}
			if raw == nil {
				continue
			}
			for _, s := range raw.Secrets {
				if rel, err := load.SecretFilePath(s.File); err == nil {
					out[path.Join(root, rel)] = true
				}
			}
		}
	}
	return out
}

// parseFile splits a file into documents and parses each one, within the
// revision's limits.
func parseFile(c *yamlpos.Collector, app, file string, data []byte, b *policy.Budget) []*object {
	if !utf8.Valid(data) {
		c.Add(yamlpos.InvalidUTF8(file, data), "", "file is not valid UTF-8")
		return nil
	}
	var objs []*object
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for docs := 1; ; docs++ {
		var n yaml.Node
		err := yamlpos.DecodeNode(dec, &n)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err == nil && (!policy.CheckDocuments(c, file, &n, docs, b.Limits.Documents) || !policy.CheckStructure(c, file, &n, b)) {
			return objs
		}
		if err != nil {
			// The decoder cannot resync after a syntax error: the rest of
			// the file is unread.
			pos, msg := yamlpos.SyntaxError(file, data, err)
			c.Add(pos, "", "YAML syntax error: %s", msg)
			return objs
		}
		if len(n.Content) == 0 || yamlpos.IsNull(n.Content[0]) {
			continue // empty document, e.g. after a trailing ---
		}
		if o := parseDocument(c, app, file, n.Content[0]); o != nil {
			objs = append(objs, o)
		}
	}
}

// parseDocument checks one document's structure against the schema of its
// kind, decodes it strictly and validates it on its own. Cross-document
// checks happen in assemble.
func parseDocument(c *yamlpos.Collector, app, file string, root *yaml.Node) *object {
	doc := &yamlpos.DocCtx{
		File:   file,
		Start:  manifest.Position{File: file, Line: root.Line, Column: root.Column},
		Pos:    map[string]manifest.Position{},
		Failed: map[string]bool{},
	}
	kind := peekKind(root)
	if kind == "" && load.ComposeShaped(root) {
		c.Add(doc.Start, "", "this reads as a compose file, under a name compose does not look for (compose.yaml, compose.yml, docker-compose.yaml, docker-compose.yml): rename it, or name it in COMPOSE_FILE (in the app's .env or environment), as docker compose -f would")
		return nil
	}
	var target any
	switch kind {
	case manifest.KindService:
		target = &rawServiceDoc{}
	case manifest.KindNetwork:
		target = &rawNetworkDoc{}
	case manifest.KindVolume:
		target = &rawVolumeDoc{}
	case manifest.KindJob:
		target = &rawJobDoc{}
	case manifest.KindApp:
		target = &rawAppDoc{}
	default:
		target = &rawHeader{}
	}
	w := &yamlpos.Walker{Doc: doc, Errs: c}
	val, ok := w.Walk(root, reflect.TypeOf(target).Elem(), "")
	if !ok {
		return nil // not a mapping: nothing to decode
	}
	// The walker has already rejected everything malformed; what remains is
	// decoded strictly as a second line of defence.
	if err := yamlpos.DecodeStrict(val, target); err != nil {
		c.Add(doc.Start, "", "cannot decode document: %v", err)
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
	case *rawJobDoc:
		apiVersion, meta = t.APIVersion, t.Metadata
		o.jobRaw = t.Spec
	case *rawAppDoc:
		apiVersion, meta = t.APIVersion, t.Metadata
		o.appRaw = t.Spec
	case *rawHeader:
		apiVersion, meta = t.APIVersion, t.Metadata
	}
	validateHeader(c, doc, apiVersion, kind, meta, o)
	known := knownKind(kind)
	if known {
		validateObject(c, app, o, w)
	}
	// A broken object keeps its name so other documents' references to it
	// do not produce follow-up errors, but its content is unreliable and
	// takes no part in the checks across documents.
	o.broken = w.Bad || !known
	return o
}

// validateObject validates a well-formed object on its own, dropping
// errors about fields the walker already reported (or their parents and
// children): they would only echo it.
func validateObject(c *yamlpos.Collector, app string, o *object, w *yamlpos.Walker) {
	vc := &yamlpos.Collector{}
	switch o.kind {
	case manifest.KindService:
		validateService(vc, app, o)
	case manifest.KindNetwork:
		validateNetwork(vc, o)
	case manifest.KindVolume:
		validateVolume(vc, o)
	case manifest.KindJob:
		validateJob(vc, app, o)
	case manifest.KindApp:
		validateAppDoc(vc, o)
	}
	for _, e := range vc.Errs {
		if !w.Bad || !o.doc.RelatedToFailure(e.Field) {
			c.Errs = append(c.Errs, e)
		}
	}
}

// knownKinds are the kinds of native documents.
var knownKinds = []string{manifest.KindService, manifest.KindNetwork, manifest.KindVolume, manifest.KindJob, manifest.KindApp}

func knownKind(kind string) bool { return slices.Contains(knownKinds, kind) }

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
