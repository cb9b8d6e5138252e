// Package yamlpos is what the front ends share to put every error at its
// file:line:column: the error collector and the reporter, the positions of a
// YAML document's field paths (DocCtx), the walker that checks a document
// against a schema type, and yaml.v3's syntax errors located.
package yamlpos
