package yamlpos

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/manifest"
)

// DecodeNode guards against panics inside the YAML library: a manifest must
// never crash the agent.
func DecodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

var (
	yamlLineErr  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAlias = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// parserProblems are the yaml.v3 parser (not scanner) errors: for these the
// library prints a 0-based line.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found undefined tag handle",
}

// SyntaxError locates a yaml.v3 error. yaml.v3 errors are plain strings;
// the line, when present, is in the text, and is omitted when it is the
// first line of the file.
func SyntaxError(file string, data []byte, err error) (manifest.Position, string) {
	msg := err.Error()
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(parserProblems, m[2]) {
			line++
		}
		if tabProblem(m[2]) {
			// yaml.v3 names the line before the tab for some of these.
			for _, l := range []int{line, line + 1} {
				if col := indentTab(data, l); col > 0 {
					return manifest.Position{File: file, Line: l, Column: col}, "a tab indents this line; YAML indentation must be spaces"
				}
			}
		}
		return manifest.Position{File: file, Line: max(line, 1)}, m[2]
	}
	if m := unknownAlias.FindStringSubmatch(msg); m != nil {
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
			return offsetPos(file, data, i), strings.TrimPrefix(msg, "yaml: ")
		}
	}
	return manifest.Position{File: file, Line: 1}, strings.TrimPrefix(msg, "yaml: ")
}

// tabProblem tells the yaml.v3 messages a tab in the indentation causes.
func tabProblem(msg string) bool {
	return strings.Contains(msg, "tab character") || msg == "found character that cannot start any token"
}

// indentTab is the 1-based column of a tab in the indentation of line
// (1-based) of data, or 0: yaml.v3 reports such a tab only as "found
// character that cannot start any token", without a column.
func indentTab(data []byte, line int) int {
	if line < 1 {
		return 0
	}
	lines := bytes.SplitN(data, []byte("\n"), line+1)
	if len(lines) < line {
		return 0
	}
	text := lines[line-1]
	indent := len(text) - len(bytes.TrimLeft(text, " \t"))
	if i := bytes.IndexByte(text[:indent], '\t'); i >= 0 {
		return i + 1
	}
	return 0
}

func InvalidUTF8(file string, data []byte) manifest.Position {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return offsetPos(file, data, i)
		}
		i += size
	}
	return manifest.Position{File: file, Line: 1}
}

func offsetPos(file string, data []byte, off int) manifest.Position {
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return manifest.Position{File: file, Line: line, Column: col}
}
