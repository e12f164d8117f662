// Package gittest runs the real git CLI for tests, isolated from the
// machine's configuration and with a fixed identity, so that tests build
// real repositories the same way everywhere.
package gittest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	return Run(t, Env(), dir, nil, args...)
}

// Run runs git with args in dir, with env and stdin (nil: none), and
// returns its standard output; a failure ends the test with git's standard
// error. It is the one runner every test helper of git goes through.
func Run(t testing.TB, env []string, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// InitRepo makes a repository at dir whose main branch has one commit,
// message, of files (path: content), with env.
func InitRepo(t testing.TB, env []string, dir, message string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Run(t, env, dir, nil, "init", "-q", "-b", "main")
	Run(t, env, dir, nil, "add", "-A")
	Run(t, env, dir, nil, "commit", "-qm", message)
}
