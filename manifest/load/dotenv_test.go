package load

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// FuzzReadDotenv: whatever readDotenv accepts, compose-go reads the same
// way; every statement it found is one compose-go read (the walk matches
// the parser); and a KEY= appended for any key it returned is refused as
// set twice.
func FuzzReadDotenv(f *testing.F) {
	for _, s := range []string{"A=1\nB=\"x\ny\"\n", "export A='q'  # c\n", "A=\"x\" B=2", "A\nB:c\n", "\ufeffA=1\r\n", "A=\"\\\"\" B='\\''\n", "#x\n  A = ${B:-d}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lookup := func(k string) (string, bool) { return "v-" + k, k != "UNSET" }
		vars, _, err := ReadDotenv([]byte(text), lookup)
		if err != nil {
			return
		}
		want, err := dotenv.ParseWithLookup(strings.NewReader(text), lookup)
		if err != nil || !maps.Equal(vars, want) {
			t.Fatalf("compose-go reads %q as %v (%v), readDotenv as %v", text, want, err, vars)
		}
		src := string(bytes.TrimPrefix([]byte(text), []byte("\xef\xbb\xbf")))
		stmts, err := dotenvStatements(src)
		if err != nil {
			t.Fatal(err)
		}
		if kept, err := confirmStatements(src, slicesClone(stmts)); err != nil || len(kept) != len(stmts) {
			t.Fatalf("the walk found %d statements in %q, the parser read %d (%v)", len(stmts), text, len(kept), err)
		}
		for k := range vars {
			again, setTwice, err := ReadDotenv([]byte(text+"\n"+k+"="), lookup)
			if err != nil || len(setTwice) == 0 || setTwice[len(setTwice)-1].Key != k || again[k] != "" {
				t.Fatalf("%q with %s= appended: %v %v, want it set twice, the last value counting", text, k, setTwice, err)
			}
		}
	})
}

func slicesClone(s []dotenvStatement) []dotenvStatement { return append([]dotenvStatement(nil), s...) }
