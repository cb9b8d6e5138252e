// Package loadtest holds what the tests of the manifest packages share:
// loading an app from file contents with either front end, and the error
// lines a refused load returns.
package loadtest
