package deploy

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/drift/manifest"
)

func TestContextTar(t *testing.T) {
	tree := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{
		{Path: "Dockerfile", Data: []byte("FROM scratch\n")},
		{Path: "bin/app", Exec: true, Data: []byte("ELF")},
		{Path: "bin/current", Link: "app", Data: []byte("app")},
		{Path: "src/a/b/c.go", Data: []byte("package c")},
	}}
	data, err := ContextTar(tree)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ContextTar(tree)
	if !bytes.Equal(data, again) {
		t.Error("the same tree gave two different tars")
	}
	var got []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got = append(got, fmt.Sprintf("%c %s %o %q %s", h.Typeflag, h.Name, h.Mode, body, h.Linkname))
	}
	want := []string{
		`0 Dockerfile 644 "FROM scratch\n" `,
		`5 bin/ 755 "" `,
		`0 bin/app 755 "ELF" `,
		`2 bin/current 777 "" app`,
		`5 src/ 755 "" `,
		`5 src/a/ 755 "" `,
		`5 src/a/b/ 755 "" `,
		`0 src/a/b/c.go 644 "package c" `,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tar:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A failed build's stream: lines arrive in pieces, the failing step is
// the last "Step" line, the tail keeps the last 20 lines.
func TestBuildOutputFailure(t *testing.T) {
	var stream strings.Builder
	stream.WriteString(`{"stream":"Step 1/2 : FROM scratch\n"}` + "\n")
	for i := range 25 {
		fmt.Fprintf(&stream, `{"stream":"noise %d\n"}`+"\n", i)
	}
	stream.WriteString(`{"stream":"Step 2/2 : COPY missing "}` + "\n")
	stream.WriteString(`{"stream":"/x\n"}` + "\n")
	stream.WriteString(`{"errorDetail":{"message":"COPY failed: file not found in build context"},"error":"COPY failed: file not found in build context"}` + "\n")
	var lines []string
	o := &buildOutput{emit: func(l string) { lines = append(lines, l) }}
	err := o.read(strings.NewReader(stream.String()))
	var se *buildStepError
	if !errors.As(err, &se) || se.msg != "COPY failed: file not found in build context" {
		t.Fatalf("error %v, want the builder's message", err)
	}
	if o.step != "Step 2/2 : COPY missing /x" {
		t.Errorf("step %q", o.step)
	}
	if len(o.tail) != buildTailLines || o.tail[len(o.tail)-1] != "Step 2/2 : COPY missing /x" || o.tail[0] != "noise 6" {
		t.Errorf("tail %q", o.tail)
	}
	if len(lines) != 27 || lines[0] != "Step 1/2 : FROM scratch" {
		t.Errorf("emitted %d lines, first %q", len(lines), lines[0])
	}
	be := &drift.BuildError{Image: "driftless/shop-web:tree-abc", Services: []string{"web"}, Step: o.step, Err: errors.New(se.msg)}
	if got, want := be.Error(), `building driftless/shop-web:tree-abc for web failed at "Step 2/2 : COPY missing /x": COPY failed: file not found in build context`; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}

func TestBuildOptions(t *testing.T) {
	bc := &manifest.BuildContext{
		Ref:   "shop/web:tree-0123456789ab",
		Tags:  []string{"shop/web:1"},
		Build: manifest.Build{Dockerfile: "Dockerfile.prod", Args: map[string]string{"A": "1", "B": ""}, Target: "prod", TreeHash: "0123456789abcdef"},
	}
	o := buildOptions("shop", bc)
	if strings.Join(o.Tags, ",") != "shop/web:tree-0123456789ab,shop/web:1" || o.Dockerfile != "Dockerfile.prod" || o.Target != "prod" {
		t.Errorf("options %+v", o)
	}
	if o.BuildArgs["A"] == nil || *o.BuildArgs["A"] != "1" || o.BuildArgs["B"] == nil || *o.BuildArgs["B"] != "" {
		t.Errorf("args %v", o.BuildArgs)
	}
	if !o.Remove || !o.ForceRemove {
		t.Error("intermediate containers would be left on a shared engine")
	}
	if o.Labels[drift.LabelApp] != "shop" || o.Labels[drift.LabelBuilt] != "true" || o.Labels[drift.LabelBuildTree] != "0123456789abcdef" {
		t.Errorf("labels %v", o.Labels)
	}
}
