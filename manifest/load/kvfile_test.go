package load_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// ReadKVFile reads an env_file or a label_file of the revision as compose
// reads it from disk, refusing what it cannot read at the place the file
// is named and warning of a key set twice at its line.
func TestReadKVFile(t *testing.T) {
	fsys := fstest.MapFS{
		"app/plain.env": {Data: []byte("A=1\nB=${A}-2\nA=3\n")},
		"app/sops.env":  {Data: []byte("A=ENC[x]\nsops_mac=ENC[y]\n")},
		"app/dir/x":     {Data: []byte("")},
	}
	at := manifest.Position{File: "compose.yaml", Line: 4, Column: 7}
	env := func(p string) load.KVFile {
		return load.KVFile{Kind: "env file", Path: p, Required: true, Missing: "commit it, or mark it required: false", Decrypt: true, Pos: at, Field: "services.web.env_file[0]"}
	}
	display := func(p string) string { return strings.TrimPrefix(p, "app/") }
	for _, tc := range []struct {
		what     string
		f        load.KVFile
		vars     string
		errs     string
		warnings string
	}{
		{"a plain file, a key set twice", env("plain.env"), "A=3 B=1-2", "",
			`plain.env:3: services.web.env_file[0]: key "A" is set twice (lines 1 and 3): the later value counts, as in compose`},
		{"optional and missing", func() load.KVFile { f := env("gone.env"); f.Required = false; return f }(), "", "", ""},
		{"required and missing", env("gone.env"), "",
			`compose.yaml:4:7: services.web.env_file[0]: env file "gone.env" does not exist in the repository: commit it, or mark it required: false`, ""},
		{"a label file missing", load.KVFile{Kind: "label file", Path: "gone.labels", Required: true, Missing: "commit it", Pos: at, Field: "services.web.label_file[0]"}, "",
			`compose.yaml:4:7: services.web.label_file[0]: label file "gone.labels" does not exist in the repository: commit it`, ""},
		{"a host path", env("/etc/app.env"), "",
			`compose.yaml:4:7: services.web.env_file[0]: "/etc/app.env": env files are read from the revision, so the path must be relative to the app directory`, ""},
		{"above the app directory", env("../other/app.env"), "",
			`compose.yaml:4:7: services.web.env_file[0]: env file "../other/app.env" leaves the app directory`, ""},
		{"a directory", env("dir"), "",
			`compose.yaml:4:7: services.web.env_file[0]: cannot read env file "dir"`, ""},
		{"a format compose has and driftless does not", func() load.KVFile { f := env("plain.env"); f.Format = "raw"; return f }(), "",
			`compose.yaml:4:7: services.web.env_file[0]: env file format "raw" is not supported`, ""},
		{"encrypted, no key", env("sops.env"), "",
			`compose.yaml:4:7: services.web.env_file[0]: env file "sops.env" is SOPS-encrypted and cannot be decrypted here: no decryption is configured`, ""},
	} {
		r := load.ReadKVFile(fsys, "app", display, load.Options{}, tc.f, nil)
		var vars []string
		for _, k := range slices.Sorted(maps.Keys(r.Vars)) {
			vars = append(vars, k+"="+r.Vars[k])
		}
		errs, warnings := lines(r.Errs.Errs), lines(r.Warnings.Errs)
		if strings.Join(vars, " ") != tc.vars || !strings.HasPrefix(errs, tc.errs) || (tc.errs == "" && errs != "") || warnings != tc.warnings {
			t.Errorf("%s: vars %q, errors %q, warnings %q\nwant vars %q, errors %q…, warnings %q", tc.what, vars, errs, warnings, tc.vars, tc.errs, tc.warnings)
		}
	}
}

func lines(errs []*manifest.Error) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "\n")
}
