package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"gopkg.in/yaml.v3"
)

// localKeys are the settings a repository may not choose for itself, with
// what each one governs. They grant the app power over the host or reach
// secrets and other repositories, so only the agent's owner gives them, in
// the source's template in driftless.yaml. Naming them apart from unknown
// keys tells the user where the setting belongs instead of "no such key".
var localKeys = map[string]string{
	"allow":                  "host power",
	"privileged":             "host power",
	"hostPaths":              "host power",
	"homeDir":                "the home directory",
	"shared":                 "sharing with other apps",
	"registries":             "registry access",
	"decryption":             "decryption",
	"limits":                 "resource limits",
	"verify":                 "signature verification",
	"environment":            "the environment",
	"credentials":            "git credentials",
	"usernameEnv":            "git credentials",
	"passwordEnv":            "git credentials",
	"passwordFile":           "git credentials",
	"tokenFile":              "git credentials",
	"sshKeyFile":             "git credentials",
	"sshKeyPassphraseEnv":    "git credentials",
	"knownHostsFile":         "git host key checking",
	"insecureIgnoreHostKey":  "git host key checking",
	"webhookSecretEnv":       "the webhook secret",
	"webhookSecretFile":      "the webhook secret",
	"repo":                   "the repository",
	"allowInsecureTransport": "git transport security",
	"notifications":          "notifications",
	"commitStatus":           "commit status reporting",
	"target":                 "the deploy target",
	"engine":                 "the engine the app runs on",
	"engines":                "the engines the app runs on",
	"adopt":                  "adopting containers",
}

// localReleaseKeys are the release settings only driftless.yaml gives: a
// check probes from the agent's host.
var localReleaseKeys = map[string]string{
	"check": "the release check",
}

// fileParser reads one driftless-apps.yaml, or the apps: of a
// driftless.yaml (config), and collects every error with its position, so
// one push can fix them all.
type fileParser struct {
	file string // as given in the generator, printed in messages
	// config: the file is the agent's driftless.yaml from Git. Its other
	// top-level keys are refused (they stay local), and an entry may name
	// its repository (repo:).
	config bool
	errs   []error
}

// discoverFile lists the apps the file declares, in file order; config:
// the file is a driftless.yaml (the config: generator).
func discoverFile(fsys fs.FS, file string, config bool) ([]App, error) {
	data, err := fs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing at this revision: add it to the repository or change the file the source names in driftless.yaml (%w)", file, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	p := &fileParser{file: file, config: config}
	apps := p.parse(data)
	if err := errors.Join(p.errs...); err != nil {
		return nil, err
	}
	return apps, nil
}

// parse reads the one document of data.
func (p *fileParser) parse(data []byte) []App {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := yamlpos.DecodeNode(dec, &doc); err != nil {
		if err == io.EOF {
			p.errs = append(p.errs, fmt.Errorf("%s: the file is empty: write apps: and a list of apps (apps: [] for none)", p.file))
		} else {
			p.syntaxError(data, err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := yamlpos.DecodeNode(dec, &extra); {
	case err == io.EOF:
	case err != nil:
		p.syntaxError(data, err)
		return nil
	default:
		p.errorf(&extra, "a second document: the file holds one document, with apps:")
		return nil
	}
	if len(doc.Content) == 0 {
		p.errorf(&doc, "the file is empty: write apps: and a list of apps (apps: [] for none)")
		return nil
	}
	return p.root(resolve(doc.Content[0]))
}

// syntaxError reports yaml.v3's error in the file:line form of the others.
func (p *fileParser) syntaxError(data []byte, err error) {
	pos, msg := yamlpos.SyntaxError(p.file, data, err)
	p.errs = append(p.errs, fmt.Errorf("%s: %s", pos, msg))
}

// errorf records an error at n's position.
func (p *fileParser) errorf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d:%d: %s", p.file, n.Line, n.Column, fmt.Sprintf(format, args...)))
}

// resolve follows an alias to the node it names, so anchors can share a
// profile list or release block between entries.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// pair is one key and value of a mapping.
type pair struct {
	key   string
	keyN  *yaml.Node
	value *yaml.Node
}

// pairs lists m's keys and values, reporting keys that are not plain
// strings or that repeat (yaml.v3 leaves both to the caller for Nodes).
func (p *fileParser) pairs(m *yaml.Node, where string) []pair {
	var out []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, "%s: a key must be a plain string", where)
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.errorf(k, "%s: key %s repeats the one on line %d", where, k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, pair{key: k.Value, keyN: k, value: v})
	}
	return out
}

// root reads the top-level mapping, which holds apps: only.
func (p *fileParser) root(n *yaml.Node) []App {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "expected a mapping with apps:")
		return nil
	}
	var list *yaml.Node
	for _, kv := range p.pairs(n, "top level") {
		switch {
		case kv.key == "apps":
		case p.config:
			p.errorf(kv.keyN, "%s: only apps: is read from Git; %s belongs in the agent's local configuration (--config)", kv.key, kv.key)
			continue
		default:
			p.errorf(kv.keyN, "unknown key %s: the file holds only apps:", kv.key)
			continue
		}
		list = kv.value
	}
	if list == nil {
		p.errorf(n, "apps: is missing: write apps: and a list of apps (apps: [] for none)")
		return nil
	}
	return p.apps(list)
}

// apps reads the list of entries and checks that names are unique.
func (p *fileParser) apps(list *yaml.Node) []App {
	if list.Kind != yaml.SequenceNode {
		p.errorf(list, "apps: expected a list of apps")
		return nil
	}
	var apps []App
	nameLine := map[string]int{}
	for i, item := range list.Content {
		app, nameN, ok := p.entry(i, resolve(item))
		if !ok {
			continue
		}
		if line, dup := nameLine[app.Name]; dup {
			p.errorf(nameN, "apps[%d].name: %q is used by another entry (line %d)", i, app.Name, line)
			continue
		}
		nameLine[app.Name] = nameN.Line
		apps = append(apps, app)
	}
	return apps
}

// entry reads apps[i]. It returns the app, the node of its name key (for
// the duplicate check) and whether the entry is usable; errors are recorded.
func (p *fileParser) entry(i int, n *yaml.Node) (App, *yaml.Node, bool) {
	where := fmt.Sprintf("apps[%d]", i)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: expected a mapping with name: and path:", where)
		return App{}, nil, false
	}
	before := len(p.errs)
	app := App{At: fmt.Sprintf("%s:%d", p.file, n.Line)}
	var nameN, pathN, branchN, tagN *yaml.Node
	for _, kv := range p.pairs(n, where) {
		field := where + "." + kv.key
		switch kv.key {
		case "name":
			nameN = kv.keyN
			app.Name = p.name(kv, field)
		case "path":
			pathN = kv.keyN
			app.Path = p.path(kv, field)
		case "branch":
			branchN = kv.keyN
			app.Branch = p.str(kv, field)
		case "tag":
			tagN = kv.keyN
			app.Tag = p.str(kv, field)
		default:
			p.option(&app, kv, field)
		}
	}
	if nameN == nil {
		p.errorf(n, "%s: name: is missing: give the app a name", where)
	}
	if pathN == nil {
		p.errorf(n, "%s: path: is missing: give the app's directory in the repository (\".\" for the root)", where)
	}
	if branchN != nil && tagN != nil {
		p.errorf(tagN, "%s.tag: give branch or tag, not both", where)
	}
	return app, nameN, len(p.errs) == before
}

// option reads the entry's keys other than its identity (name, path,
// branch, tag). A config: entry may also name its repository.
func (p *fileParser) option(app *App, kv pair, field string) {
	known := "name, path, branch, tag, interval, prune, selfHeal, profiles, release"
	if p.config {
		known = "name, repo, path, branch, tag, interval, prune, selfHeal, profiles, release"
		if kv.key == "repo" {
			app.Repo = p.repo(kv, field)
			return
		}
	}
	switch kv.key {
	case "interval":
		app.Interval = p.str(kv, field)
	case "prune":
		app.Prune = p.boolean(kv, field)
	case "selfHeal":
		app.SelfHeal = p.boolean(kv, field)
	case "profiles":
		app.Profiles = p.strList(kv, field)
	case "release":
		app.Release = p.release(kv, field)
	default:
		p.unknown(kv, field, localKeys, known)
	}
}

// unknown reports a key the entry does not take: a local setting says
// where it belongs, anything else lists the keys that exist.
func (p *fileParser) unknown(kv pair, field string, local map[string]string, known string) {
	if what, ok := local[kv.key]; ok {
		p.errorf(kv.keyN, "%s: %s is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository", field, what)
		return
	}
	p.errorf(kv.keyN, "%s: unknown key: the keys are %s", field, known)
}

// name reads an app name, which must already be DNS-safe: the file says
// exactly what the app is called.
func (p *fileParser) name(kv pair, field string) string {
	s := p.str(kv, field)
	if s == "" || validName(s) {
		return s
	}
	hint := ""
	if suggestion := AppName(s); suggestion != "" {
		hint = fmt.Sprintf(" (e.g. %q)", suggestion)
	}
	p.errorf(kv.keyN, "%s: %q is not a valid app name: use lowercase letters, digits and '-', starting with a letter and not ending with '-', at most %d characters%s", field, s, maxNameLen, hint)
	return ""
}

// path reads a directory of the repository.
func (p *fileParser) path(kv pair, field string) string {
	s := p.str(kv, field)
	if s == "" {
		return ""
	}
	if err := checkRelPath(s); err != nil {
		p.errorf(kv.keyN, "%s: %v", field, err)
		return ""
	}
	return s
}

// repo reads a repository URL, which must not hold a password: the
// file is in Git, and credentials are local settings.
func (p *fileParser) repo(kv pair, field string) string {
	s := p.str(kv, field)
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			p.errorf(kv.keyN, "%s: the URL contains a password: credentials are local settings, given by the source's template in the agent's driftless.yaml", field)
			return ""
		}
	}
	return s
}

// str reads a non-empty scalar as written.
func (p *fileParser) str(kv pair, field string) string {
	n := kv.value
	switch {
	case n.Kind != yaml.ScalarNode:
		p.errorf(kv.keyN, "%s: expected a string", field)
	case n.Tag == "!!null" || n.Value == "":
		p.errorf(kv.keyN, "%s: has no value: give one or remove the key", field)
	default:
		return n.Value
	}
	return ""
}

// boolean reads true or false.
func (p *fileParser) boolean(kv pair, field string) *bool {
	var b bool
	if kv.value.Kind != yaml.ScalarNode || kv.value.Tag != "!!bool" || kv.value.Decode(&b) != nil {
		p.errorf(kv.keyN, "%s: expected true or false", field)
		return nil
	}
	return &b
}

// strList reads a list of non-empty strings.
func (p *fileParser) strList(kv pair, field string) []string {
	if kv.value.Kind != yaml.SequenceNode {
		p.errorf(kv.keyN, "%s: expected a list of strings", field)
		return nil
	}
	out := []string{}
	for i, item := range kv.value.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode || item.Tag == "!!null" || item.Value == "" {
			p.errorf(item, "%s[%d]: expected a non-empty string", field, i)
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

// release reads the release settings a repository may choose.
func (p *fileParser) release(kv pair, field string) *Release {
	if kv.value.Kind != yaml.MappingNode {
		p.errorf(kv.keyN, "%s: expected a mapping of watch, unreadyFor and maxRestarts", field)
		return nil
	}
	r := &Release{}
	for _, sub := range p.pairs(kv.value, field) {
		subField := field + "." + sub.key
		switch sub.key {
		case "watch":
			r.Watch = p.str(sub, subField)
		case "unreadyFor":
			r.UnreadyFor = p.str(sub, subField)
		case "maxRestarts":
			r.MaxRestarts = p.count(sub, subField)
		default:
			p.unknown(sub, subField, localReleaseKeys, "watch, unreadyFor, maxRestarts")
		}
	}
	return r
}

// count reads a whole number, zero or more.
func (p *fileParser) count(kv pair, field string) *int {
	var v int
	if kv.value.Kind != yaml.ScalarNode || kv.value.Tag != "!!int" || kv.value.Decode(&v) != nil || v < 0 {
		p.errorf(kv.keyN, "%s: expected a whole number, 0 or more", field)
		return nil
	}
	return &v
}
