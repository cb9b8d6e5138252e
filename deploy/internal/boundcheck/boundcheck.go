// Package boundcheck is a test helper: it checks that a decorator giving
// each request a deadline (deploy's and Swarm's boundedAPI) declares every
// method of the interface it wraps, except the ones named unbounded, so
// that a method added to the interface cannot pass through without one.
package boundcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"
)

// Check reads file and fails t for each method of iface that recv
// (a pointer receiver's type name) does not declare there and unbounded
// does not name, and for each that is both.
func Check(t *testing.T, file, recv string, iface reflect.Type, unbounded map[string]bool) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	bounded := map[string]bool{}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok && fmt.Sprint(star.X) == recv {
				bounded[fn.Name.Name] = true
			}
		}
	}
	for i := range iface.NumMethod() {
		name := iface.Method(i).Name
		switch {
		case !bounded[name] && !unbounded[name]:
			t.Errorf("%s has no deadline: bound it in %s, or name it unbounded if it streams", name, file)
		case bounded[name] && unbounded[name]:
			t.Errorf("%s is both bounded in %s and named unbounded", name, file)
		}
	}
}
