//go:build !race

package gittools_test

const raceEnabled = false
