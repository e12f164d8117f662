package runs

import (
	"errors"
	"strings"

	"github.com/airlock-dev/airlock/sandbox"
)

// cacheHome is where a run's caches are: the worker's cache (RunOptions.
// Cache), or without one a directory of the session's that goes with it.
const cacheHome = sandbox.Home + "/.cache"

// cacheEnv points the usual toolchains' caches into cacheHome, those that
// would not look there on their own included (Go's module cache, npm's,
// cargo's), so that they too outlive the run.
var cacheEnv = []string{
	"XDG_CACHE_HOME=" + cacheHome,
	"GOCACHE=" + cacheHome + "/go-build",
	"GOMODCACHE=" + cacheHome + "/go-mod",
	"PIP_CACHE_DIR=" + cacheHome + "/pip",
	"npm_config_cache=" + cacheHome + "/npm",
	"CARGO_HOME=" + cacheHome + "/cargo",
	"CCACHE_DIR=" + cacheHome + "/ccache",
}

// networkEnv: without the network, Go takes modules from its cache only
// (GOPROXY=off), without the checksum database it cannot reach; with it,
// Go's own defaults (the module proxy, checked against sum.golang.org).
func networkEnv(network bool) []string {
	if network {
		return nil
	}
	return []string{"GOPROXY=off", "GOSUMDB=off"}
}

func runArgv(a Args) ([]string, error) {
	switch {
	case a.Command != "" && len(a.Argv) > 0:
		return nil, errors.New("give either command (a shell line) or argv (a program and its arguments), not both")
	case a.Command != "":
		if len(a.Command) > 64<<10 {
			return nil, errors.New("command is longer than 64 KiB; put a script in the workspace and run that")
		}
		return []string{"/bin/sh", "-c", a.Command}, nil
	case len(a.Argv) > 0:
		if a.Argv[0] == "" {
			return nil, errors.New("argv[0] is empty; it names the program to run")
		}
		return a.Argv, nil
	}
	return nil, errors.New("nothing to run: give command, e.g. \"go test ./...\", or argv, e.g. [\"make\", \"test\"]")
}

// runEnv is the environment every run gets: built, never inherited.
func runEnv(network bool, extra []string) []string {
	env := []string{
		"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"HOME=" + sandbox.Home, "USER=root", "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=/tmp", "PWD=" + sandbox.Workspace,
		"GOTOOLCHAIN=local", "GOFLAGS=-mod=mod",
	}
	env = append(append(env, cacheEnv...), networkEnv(network)...)
	for _, e := range extra {
		k, _, _ := strings.Cut(e, "=")
		for i := range env {
			if strings.HasPrefix(env[i], k+"=") {
				env = append(env[:i], env[i+1:]...)
				break
			}
		}
		env = append(env, e)
	}
	return env
}
