package load

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/compose-spec/compose-go/v2/dotenv"

	"github.com/driftless-dev/driftless/manifest"
)

var dotenvLine = regexp.MustCompile(`line (\d+): `)

// DotenvErrorPos locates a dotenv error by the line it names.
func DotenvErrorPos(file string, err error) manifest.Position {
	if m := dotenvLine.FindStringSubmatch(err.Error()); m != nil {
		if line, e := strconv.Atoi(m[1]); e == nil && line > 0 {
			return manifest.Position{File: file, Line: line}
		}
	}
	return manifest.Position{File: file, Line: 1}
}

func DotenvMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "failed to read .env: ")
	if i := dotenvLine.FindStringIndex(msg); i != nil && i[0] == 0 {
		msg = msg[i[1]:]
	}
	return msg
}

// KeyError is a key of an env file or of a decrypted secret that
// driftless refuses: one set twice (Msg empty), or one that reads as
// another key and a value (Msg says why). Readers disagree on which of
// two values counts (compose and sops keep the last), and a key added
// with an empty value passes the SOPS MAC, so appending KEY= to an
// encrypted file would blank a secret: the file is refused instead.
// Package secrets returns it for a decrypted file, where Line is a line
// of the file as committed.
type KeyError struct {
	Key   string
	First int // set twice: the line of the first; 0 if unknown
	Line  int // the line of the (second) key; 0 if unknown
	Msg   string
}

func (e *KeyError) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("key %q %s", e.Key, e.Msg)
	}
	where := ""
	if e.First > 0 && e.Line > 0 {
		where = fmt.Sprintf(" (lines %d and %d)", e.First, e.Line)
	}
	return fmt.Sprintf("key %q is set twice%s: a file may set each key once; remove one", e.Key, where)
}

// ReadDotenv reads an env file as compose's env_file does, with
// compose-go's own parser (quotes and escapes, export, inline comments,
// ${VAR} from lookup and the file's earlier variables), and names each key
// the file sets twice (the last value is in vars, as compose keeps it).
// The caller decides: a secret or a decrypted file is refused (see
// KeyError), a plain env file only warned about. Native envFrom and
// compose env_file both read through here, so a file means the same in
// either.
func ReadDotenv(data []byte, lookup func(string) (string, bool)) (vars map[string]string, setTwice []*KeyError, err error) {
	vars, err = dotenv.ParseWithLookup(bytes.NewReader(data), lookup)
	if err != nil {
		return nil, nil, err
	}
	// compose-go gives only the final map: where each statement starts
	// comes from dotenvStatements, checked against the parser below.
	src := string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	stmts, err := dotenvStatements(src)
	if err != nil {
		return nil, nil, err
	}
	if stmts, err = confirmStatements(src, stmts); err != nil {
		return nil, nil, err
	}
	first := map[string]int{}
	for _, s := range stmts {
		if l, dup := first[s.key]; dup {
			setTwice = append(setTwice, &KeyError{Key: s.key, First: l, Line: s.line})
			continue
		}
		first[s.key] = s.line
	}
	return vars, setTwice, nil
}

// DotenvProblem says what is wrong with a decrypted env file without the
// text compose-go's messages quote, which is secret: the line and the
// kind of problem.
func DotenvProblem(err error) string {
	var bad *KeyError
	if errors.As(err, &bad) {
		return bad.Error()
	}
	msg := err.Error()
	line := ""
	if m := dotenvLine.FindStringSubmatch(msg); m != nil {
		line = "line " + m[1] + ": "
	}
	for _, kind := range []string{"unterminated quoted value", "unexpected character in variable name", "key cannot contain a space", "a variable without a name", "cannot tell the statements apart"} {
		if strings.Contains(msg, kind) {
			return line + kind
		}
	}
	return line + "not an env file as compose reads one (KEY=VALUE lines)"
}

// dotenvStatement is one KEY=value (or KEY) of an env file: the key as
// compose-go reads it, where it ends in the source, and its line.
type dotenvStatement struct {
	key  string
	end  int
	line int
}

var dotenvExport = regexp.MustCompile(`^export\s+`)

// dotenvStatements finds the statements of src the way compose-go's
// parser walks it: blank space and # comment lines are skipped, a key
// runs to '=', ':' or a newline (export dropped), and a value to the end
// of its line or, quoted, to its closing quote (backslash escapes it). It
// assumes src parses.
func dotenvStatements(src string) ([]dotenvStatement, error) {
	var out []dotenvStatement
	for pos := 0; ; {
		start, ok := dotenvStatementStart(src, pos)
		if !ok {
			return out, nil
		}
		s, next := dotenvStatementAt(src, start)
		if s.key == "" {
			return nil, fmt.Errorf("line %d: a variable without a name: write KEY=VALUE", s.line)
		}
		out = append(out, s)
		pos = next
	}
}

// dotenvStatementStart is where the next statement at or after pos
// starts, past white space and comment lines.
func dotenvStatementStart(src string, pos int) (int, bool) {
	for {
		i := strings.IndexFunc(src[pos:], func(r rune) bool { return !unicode.IsSpace(r) })
		if i < 0 {
			return 0, false
		}
		pos += i
		if src[pos] != '#' {
			return pos, true
		}
		nl := strings.IndexByte(src[pos:], '\n')
		if nl < 0 {
			return 0, false
		}
		pos += nl
	}
}

// dotenvStatementAt reads the statement at start: its key, and where the
// next one may start.
func dotenvStatementAt(src string, start int) (dotenvStatement, int) {
	rest := src[start:]
	if dotenvExport.MatchString(rest) {
		rest = strings.TrimLeftFunc(strings.TrimPrefix(rest, "export"), dotenvSpace)
	}
	keyAt := len(src) - len(rest)
	s := dotenvStatement{line: 1 + strings.Count(src[:keyAt], "\n")}
	term := strings.IndexFunc(rest, func(r rune) bool { return r == '=' || r == ':' || r == '\n' })
	if term < 0 {
		// As compose-go: no '=' before the end, so no key; the text is
		// a value.
		s.end = keyAt
		return s, len(src)
	}
	s.key = strings.TrimRightFunc(rest[:term], unicode.IsSpace)
	s.end = keyAt + len(s.key)
	valueAt := keyAt + term + 1
	if rest[term] == '\n' { // KEY alone: its value comes from the lookup
		return s, valueAt
	}
	value := strings.TrimLeftFunc(src[valueAt:], dotenvSpace)
	valueAt = len(src) - len(value)
	return s, valueAt + dotenvValueLen(value)
}

// dotenvValueLen is how many bytes of src a value takes: to its closing
// quote, else to the end of the line.
func dotenvValueLen(src string) int {
	if src == "" || (src[0] != '"' && src[0] != '\'') {
		if nl := strings.IndexByte(src, '\n'); nl >= 0 {
			return nl + 1
		}
		return len(src)
	}
	quote, escaped := src[0], false
	for i := 1; i < len(src); i++ {
		switch {
		case src[i] != quote && !escaped && src[i] == '\\':
			escaped = true
		case src[i] != quote || escaped:
			escaped = false
		default:
			return i + 1
		}
	}
	return len(src)
}

// dotenvSpace is compose-go's space within a line (not a newline).
func dotenvSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return false
}

// confirmStatements checks stmts against compose-go's parser itself, so
// that a statement the walk above missed cannot hide a second KEY=: each
// key is renamed in place with a unique suffix (characters a key may
// hold, so nothing else moves), and every key the parser then reads must
// be one of the renamed ones. A found statement the parser does not read
// (inside a quoted value) is dropped.
func confirmStatements(src string, stmts []dotenvStatement) ([]dotenvStatement, error) {
	mark := ".driftless"
	for strings.Contains(src, mark) {
		mark += "_"
	}
	var b strings.Builder
	names := make(map[string]int, len(stmts))
	last := 0
	for i, s := range stmts {
		name := s.key + mark + strconv.Itoa(i)
		names[name] = i
		b.WriteString(src[last:s.end])
		b.WriteString(mark + strconv.Itoa(i))
		last = s.end
	}
	b.WriteString(src[last:])
	// Every KEY alone is found, and no ${VAR:?} can fail: only the
	// structure counts here.
	vars, err := dotenv.ParseWithLookup(strings.NewReader(b.String()), func(string) (string, bool) { return "x", true })
	if err != nil {
		return nil, fmt.Errorf("cannot tell the statements apart: %w", err)
	}
	read := make([]bool, len(stmts))
	for k := range vars {
		i, ok := names[k]
		if !ok {
			return nil, fmt.Errorf("cannot tell the statements apart (variable %q)", k)
		}
		read[i] = true
	}
	kept := stmts[:0]
	for i, s := range stmts {
		if read[i] {
			kept = append(kept, s)
		}
	}
	return kept, nil
}
