package runs

import (
	"fmt"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
)

// beginCache readies the cache a run binds at ~/.cache: the worker's, held
// against eviction until end is called, or the session's own.
func (r *Runner) beginCache() (dir string, end func(), err error) {
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

// cacheRoom is what a run may add to its cache: the operator's bound of
// the worker's cache, or what the workspace's quota leaves the session's
// own. Files are bounded at one a 4 KiB of room (a tmpfs
// inode costs the kernel about 1 KiB), within 10,000 and 1,000,000.
func (r *Runner) cacheRoom(wl memfs.Limits) sandbox.Bound {
	var room int64
	if c := r.opts.Cache; c != nil {
		room = c.Max() // one run may add up to the bound; the trim brings it back under
	} else {
		if r.ownCache > wl.MaxTotalBytes*3/4 {
			// Nearly full: a cache may always be emptied.
			r.clearOwnCache()
		}
		room = wl.MaxTotalBytes - r.ownCache
	}
	return sandbox.Bound{Bytes: room, Files: min(max(room/4096, 10_000), 1_000_000)}
}

// cacheKept records what a run added to its cache.
func (r *Runner) cacheKept(rep *sandbox.Report) {
	if c := r.opts.Cache; c != nil {
		c.Added(rep.CacheAdded.Bytes)
		return
	}
	r.ownCache += rep.CacheAdded.Bytes
}

// clearOwnCache empties the session's own cache.
func (r *Runner) clearOwnCache() {
	// From the mirror's descriptor: the jail's user owns the directory
	// and could have put a link in the cache's place.
	if r.mirror.ClearCache() != nil {
		return // counted as full still: tried again before the next run
	}
	r.ownCache = 0
}
