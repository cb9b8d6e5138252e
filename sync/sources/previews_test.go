package sources

import (
	"strings"
	"testing"
)

func TestPreviewName(t *testing.T) {
	for branch, want := range map[string]string{
		"preview/login":    "shop-preview-login",
		"preview/Login_2":  "shop-preview-login-2",
		"feature//x--y":    "shop-feature-x-y",
		"preview/ünïcode!": "shop-preview-n-code",
	} {
		if got := PreviewName("shop", branch); got != want {
			t.Errorf("PreviewName(shop, %q) = %q, want %q", branch, got, want)
		}
	}
	long := "preview/" + strings.Repeat("very-long-branch-name-", 5)
	a, b := PreviewName("shop", long), PreviewName("shop", long+"2")
	if len(a) > maxNameLen || !validName(a) || a == b || a != PreviewName("shop", long) {
		t.Errorf("long names %q and %q: want valid, distinct, stable and at most %d characters", a, b, maxNameLen)
	}
}

func TestBranchesGenerator(t *testing.T) {
	b := Branches{Match: "preview/*", Path: "deploy"}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if !b.Matches("preview/login") || b.Matches("main") || b.Matches("preview/a/b") {
		t.Error("preview/* must match preview/login only")
	}
	for _, bad := range []Branches{{}, {Match: "["}, {Match: "x", Path: "../up"}, {Match: "x", Path: "/abs"}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}
