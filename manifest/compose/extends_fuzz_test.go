package compose_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
)

// FuzzLoadComposeExtends checks that no pair of a compose file and a file
// it extends (or includes) panics the front end, and that every error is located in one
// of the app's files and never names the directory compose-go reads the
// staged copies from. `go test -fuzz FuzzLoadComposeExtends
// ./manifest/compose` explores.
func FuzzLoadComposeExtends(f *testing.F) {
	for _, seed := range [][2]string{
		{"services:\n  web: {extends: {file: common.yaml, service: base}}\n", "services:\n  base: {image: x, volumes: ['./c:/c']}\n"},
		{"services:\n  web: {extends: {file: sub/common.yaml, service: base}}\n", ""},
		{"services:\n  web: {extends: {file: common.yaml, service: base}}\n", "services:\n  base: {extends: {file: ../x.yaml, service: b}}\n"},
		{"services:\n  web: {extends: {file: common.yaml, service: base}}\n", "services:\n  base: {extends: {file: compose.yaml, service: web}}\n"},
		{"services:\n  web: {extends: {file: common.yaml, service: '${S}'}}\n", "services:\n  base: {image: '${', ports: [bad]}\n"},
		{"services:\n  web: {extends: {file: common.yaml, service: base}, ports: !reset []}\n", "- a\n"},
		{"services:\n  web: {extends: {file: a, service: base}}\n", "services:\n  base: {image: x}\n"},
		{"include: [common.yaml]\nservices:\n  web: {image: x}\n", "services:\n  base: {image: x, volumes: ['./c:/c']}\n"},
		{"include:\n  - path: [sub/common.yaml, common.yaml]\n    project_directory: sub\n    env_file: sub/common.env\n", "include: [../compose.yaml]\nservices:\n  web: {image: '${A}', build: ., env_file: [common.env]}\n"},
		{"include: [{path: common.yaml}]\nservices:\n  base: {image: y}\nnetworks: {n: {}}\n", "services:\n  base: {image: x, networks: [n]}\nnetworks: {n: {internal: true}}\n"},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, composeFile, common []byte) {
		fsys := fstest.MapFS{
			"compose.yaml":       {Data: composeFile},
			"common.yaml":        {Data: common},
			"sub/common.yaml":    {Data: common},
			"a":                  {Data: []byte("file")},
			"c/x.conf":           {Data: []byte("conf")},
			"sub/c/x.conf":       {Data: []byte("conf")},
			".env":               {Data: []byte("S=base\n")},
			"sub/common.env":     {Data: []byte("A=1\n")},
			"common.override.md": {Data: []byte("not yaml")},
		}
		_, err := appdir.LoadWith(fsys, ".", "fuzz", load.Options{Profiles: []string{"*"}})
		if err == nil {
			return
		}
		var list manifest.ErrorList
		if !errors.As(err, &list) {
			return // a plain fs error
		}
		for _, e := range list {
			if _, ok := fsys[e.Pos.File]; !ok || e.Pos.Line <= 0 {
				t.Fatalf("error without a position in the app's files: %#v (%v)", e.Pos, e)
			}
			if strings.Contains(e.Msg, "driftless-extends-") {
				t.Fatalf("error names the staging directory: %v", e)
			}
		}
	})
}
