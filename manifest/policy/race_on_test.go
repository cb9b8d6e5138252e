//go:build race

package policy_test

// raceDetector says the test binary runs under the race detector, whose
// shadow memory multiplies a process's resident set.
const raceDetector = true
