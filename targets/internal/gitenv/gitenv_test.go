package gitenv

import (
	"strings"
	"testing"
)

// TestCleanDropsWhatGitMustNotSee: the variables that would point git
// elsewhere or turn its checks off, and a fleet's secrets, never reach
// the git airlock runs (nor a repository's hooks); the rest do.
func TestCleanDropsWhatGitMustNotSee(t *testing.T) {
	for _, k := range []string{"GIT_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_KEY_0", "GIT_ALLOW_PROTOCOL", "AIRLOCK_NATS_PASSWORD", "AIRLOCK_NATS_TOKEN", "AIRLOCK_NATS_USER", "AIRLOCK_HTTP_TOKEN"} {
		t.Setenv(k, "x")
	}
	t.Setenv("AIRLOCK_KEEP_TEST", "kept")
	env := strings.Join(Clean(), "\n") + "\n"
	for _, k := range []string{"GIT_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_KEY_0", "GIT_ALLOW_PROTOCOL", "AIRLOCK_NATS_PASSWORD", "AIRLOCK_NATS_TOKEN", "AIRLOCK_NATS_USER", "AIRLOCK_HTTP_TOKEN"} {
		if strings.Contains(env, "\n"+k+"=") || strings.HasPrefix(env, k+"=") {
			t.Errorf("%s reaches git", k)
		}
	}
	if !strings.Contains(env, "AIRLOCK_KEEP_TEST=kept\n") || !strings.Contains(env, "GIT_TERMINAL_PROMPT=0\n") {
		t.Errorf("Clean() lost what it keeps or adds:\n%s", env)
	}
}
