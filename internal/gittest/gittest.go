// Package gittest runs the real git CLI for tests, isolated from the
// machine's configuration and with a fixed identity, so that tests build
// real repositories the same way everywhere.
package gittest

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// Env is the environment git runs with in tests: no global or system
// configuration, a fixed author and committer.
func Env() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Owner", "GIT_AUTHOR_EMAIL=owner@example.com",
		"GIT_COMMITTER_NAME=Owner", "GIT_COMMITTER_EMAIL=owner@example.com")
}

// Git runs git with args in dir and returns its standard output; a failure
// ends the test with git's standard error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}
