package session

import (
	"fmt"

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

// beginCache readies the cache a run binds at ~/.cache: the worker's, held
// against eviction until end is called, or the session's own.
func (r *runner) beginCache() (dir string, end func(), err error) {
	c := r.opts.Cache
	if c == nil {
		return r.mirror.Cache(), func() {}, nil
	}
	end, err = c.Begin(sandbox.HostUser())
	if err != nil {
		return "", nil, fmt.Errorf("the worker's cache %s: %w", c.Dir(), err)
	}
	return c.Dir(), end, nil
}
