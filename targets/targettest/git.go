package targettest

import (
	"os"
	"testing"

	"github.com/airlock-dev/airlock/internal/gittest"
)

// GitEnv is the environment tests run git in: no user or system config,
// the C locale, a fixed author and committer, then extra.
func GitEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Someone Else", "GIT_AUTHOR_EMAIL=else@example.com",
		"GIT_COMMITTER_NAME=Someone Else", "GIT_COMMITTER_EMAIL=else@example.com",
	}, extra...)...)
}

// Git runs git in dir with stdin (nil: none) and GitEnv(env...), and
// returns its output; it fails the test when git fails.
func Git(t testing.TB, dir string, stdin []byte, env []string, args ...string) string {
	t.Helper()
	return gittest.Run(t, GitEnv(env...), dir, stdin, args...)
}
