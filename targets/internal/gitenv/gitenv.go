package gitenv

import (
	"os"
	"strings"
)

// Checks are the settings every git airlock runs in a target has: git's
// own object checks on everything received (a second wall behind the tree
// check), and no fsmonitor command, which a repository's config could name.
var Checks = []string{
	"-c", "receive.fsckObjects=true",
	"-c", "transfer.fsckObjects=true",
	"-c", "core.fsmonitor=false",
}

// Clean is our environment without the variables that would make git
// operate on another repository than the one named.
func Clean() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
			// Config from the environment could turn git's checks off.
			"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
			// A fleet's secrets: a repository's hooks have no use for them.
			"AIRLOCK_NATS_USER", "AIRLOCK_NATS_PASSWORD", "AIRLOCK_NATS_TOKEN", "AIRLOCK_HTTP_TOKEN":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0")
}
