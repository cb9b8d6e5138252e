// Package yamlpos is what the front ends share to put every error at its
// file:line:column: the error collector and the reporter, the positions of a
// YAML document's field paths (DocCtx), the walker that checks a document
// against a schema type, yaml.v3's syntax errors located, the lookup of a
// field path in a node tree through aliases and merge keys, the check of
// mapping keys, and the values YAML decodes to.
package yamlpos
