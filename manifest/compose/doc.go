// Package compose is the compose front end: an app directory holding a
// compose file is loaded with compose-go, the loader docker compose uses,
// and normalized into the same manifest.App a native app becomes, every
// error at its file:line:column.
package compose
