//go:build race

package gittools_test

// raceEnabled: the race detector slows big-memory tests tenfold; they run
// without it in .ci/run.
const raceEnabled = true
