package gitenv

import (
	"os"
	"strconv"
	"strings"
)

// hooksPath is where every git airlock runs looks for hooks: at nothing.
// Only tests of a push's timing put hooks of their own somewhere
// (SetTestHooks); a repository never does.
var hooksPath = "/dev/null"

// SetTestHooks makes git look for hooks in dir, a directory the test
// made, until restore is called. For tests only: it is how a test holds
// git-receive-pack between two steps.
func SetTestHooks(dir string) (restore func()) {
	old := hooksPath
	hooksPath = dir
	return func() { hooksPath = old }
}

// Clean is our environment without the variables that would make git
// operate on another repository than the one named, take config we did
// not choose, or see a fleet's secrets.
func Clean() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GIT_CONFIG_KEY_"), strings.HasPrefix(k, "GIT_CONFIG_VALUE_"):
			continue
		}
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
			// Config from the environment could turn git's checks off.
			"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG",
			// Which transports git may use is airlock's to say (see Keys).
			"GIT_ALLOW_PROTOCOL", "GIT_PROTOCOL_FROM_USER",
			// Set below.
			"GIT_TERMINAL_PROMPT", "GIT_NO_LAZY_FETCH",
			// A fleet's secrets: no git has any use for them.
			"AIRLOCK_NATS_USER", "AIRLOCK_NATS_PASSWORD", "AIRLOCK_NATS_TOKEN", "AIRLOCK_HTTP_TOKEN":
			continue
		}
		env = append(env, kv)
	}
	// GIT_NO_LAZY_FETCH: git 2.44 and later never fetch a missing object
	// on their own (older ones are kept from it by Neutral).
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1")
}

// fixed is the config every git airlock runs has: each key of Keys
// without a sub-name set to its safe value, and Checks. except names keys
// left to the user's own config (a fetch of airlock's, see Neutral).
func fixed(except map[string]bool) [][2]string {
	var kv [][2]string
	for _, k := range Keys {
		if k.How != Set || strings.Contains(k.Name, "*") || except[k.Name] {
			continue
		}
		v := k.Value
		if k.Name == "core.hooksPath" {
			v = hooksPath
		}
		kv = append(kv, [2]string{k.Name, v})
	}
	return append(kv, Checks...)
}

// withConfig is env with config kv given as git's command-line config is
// (GIT_CONFIG_COUNT, git 2.31): it wins over every file, and unlike -c it
// takes any sub-name as it is, "=" included. The variables that keep what
// the config cannot reach go with it: a git:// proxy command (first match
// wins, and the environment's is first), editors and pagers.
func withConfig(env []string, kv [][2]string, proxy bool) []string {
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(kv)))
	for i, p := range kv {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+p[0], "GIT_CONFIG_VALUE_"+n+"="+p[1])
	}
	env = append(env, "GIT_EDITOR=:", "GIT_SEQUENCE_EDITOR=:", "GIT_PAGER=cat")
	if !proxy {
		env = append(env, "GIT_PROXY_COMMAND=")
	}
	return env
}
