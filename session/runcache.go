package session

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session/runcache"
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

// stamper keeps the times of a worker's workspace files steady across
// servers (see runcache.Stamp): at a mirror's first sync, a file whose
// content is what the worker's last server recorded at its path gets that
// server's time back; every file a sync writes is recorded with its new
// time. Stamps are saved after the first sync and when the session closes:
// a server killed in between only loses stamps, and a file without one
// gets a new time, which is always safe.
type stamper struct {
	mu     sync.Mutex // stamps, under the mirror's writers (fileTime)
	stamps map[string]runcache.Stamp
	synced *memfs.Snapshot // what the mirror held at the last stamp
	dirty  bool
	// pending are paths (directories as "/DIR") whose times are recorded
	// when the stamps are saved: a run's path does not hash what an
	// earlier run wrote.
	pending map[string]bool
}

// stampFirstSync readies a new mirror's first sync to give files the
// times the worker's last server recorded (fileTime).
func (r *runner) stampFirstSync() {
	if c := r.opts.Cache; c != nil {
		r.stamper.stamps = c.Stamps()
		r.mirror.Time = r.stamper.fileTime
	}
}

// stamp follows a Sync of r's mirror to s.
func (r *runner) stamp(s *memfs.Snapshot) {
	c, st := r.opts.Cache, &r.stamper
	if c == nil {
		return
	}
	if first := st.synced == nil; !first {
		// Only the next server uses these times: they are taken when the
		// stamps are saved (at the session's end), not now.
		if st.pending == nil {
			st.pending = map[string]bool{}
		}
		for _, ch := range st.synced.Diff(s) {
			st.pending[ch.Path] = true
			for d := path.Dir(ch.Path); ; d = path.Dir(d) {
				if d == "." {
					d = ""
				}
				st.pending["/"+d] = true
				if d == "" {
					break
				}
			}
		}
		st.synced = s
		return
	}
	// The files got their times as the mirror wrote them (fileTime); the
	// directories get theirs now that all is written.
	dirs := map[string]bool{"": true}
	s.Walk(func(e memfs.Entry) error {
		addDirs(dirs, e.Path)
		return nil
	})
	st.synced = s
	for d := range dirs {
		st.stampDir(r.mirror, d, true)
	}
	r.saveStamps()
}

// fileTime is the time the mirror's first sync gives the file e holding
// data (sandbox.Mirror.Time): the one the worker's last server recorded
// for that content at that path, or now; either is recorded.
func (st *stamper) fileTime(e memfs.Entry, data []byte) time.Time {
	id := e.ID
	if id == ([20]byte{}) {
		id = plumbing.ComputeHash(plumbing.BlobObject, data)
	}
	hid := hex.EncodeToString(id[:])
	st.mu.Lock()
	defer st.mu.Unlock()
	if old, ok := st.stamps[e.Path]; ok && old.ID == hid && old.Size == e.Size {
		return time.Unix(0, old.Time)
	}
	t := time.Now()
	st.stamps[e.Path] = runcache.Stamp{ID: hid, Size: e.Size, Time: t.UnixNano()}
	st.dirty = true
	return t
}

// stampFile applies (first) or records the time of the file e in the
// mirror's lower directory.
func (st *stamper) stampFile(m *sandbox.Mirror, e memfs.Entry, first bool) {
	id := e.ID
	if id == ([20]byte{}) {
		data, err := e.Content()
		if err != nil {
			return
		}
		id = plumbing.ComputeHash(plumbing.BlobObject, data)
	}
	st.apply(m, e.Path, e.Path, hex.EncodeToString(id[:]), e.Size, first)
}

// stampDir is stampFile for the directory d: a directory's time counts
// too (go test hashes a directory it read by its entries' and its own
// stat), keyed by its listing, under a key no file path has.
func (st *stamper) stampDir(m *sandbox.Mirror, d string, first bool) {
	ents, err := m.ReadLowerDir(d)
	if err != nil {
		st.forget("/" + d)
		return
	}
	h := sha1.New()
	for _, e := range ents {
		fmt.Fprintf(h, "%s\x00%v\x00", e.Name(), e.Type())
	}
	st.apply(m, "/"+d, d, hex.EncodeToString(h.Sum(nil)), int64(len(ents)), first)
}

// apply gives the mirror's p, which holds content id of size at key, the
// time recorded for that content at a first sync; otherwise it records
// the time p has.
func (st *stamper) apply(m *sandbox.Mirror, key, p, id string, size int64, first bool) {
	if old, ok := st.stamps[key]; first && ok && old.ID == id && old.Size == size {
		if _, err := m.LowerTime(p, time.Unix(0, old.Time)); err == nil {
			return
		}
	}
	t, err := m.LowerTime(p, time.Time{})
	if err != nil {
		return
	}
	st.stamps[key] = runcache.Stamp{ID: id, Size: size, Time: t.UnixNano()}
	st.dirty = true
}

func (st *stamper) forget(key string) {
	if _, ok := st.stamps[key]; ok {
		delete(st.stamps, key)
		st.dirty = true
	}
}

// addDirs adds the directories p lies in ("" the root) to dirs.
func addDirs(dirs map[string]bool, p string) {
	for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
		dirs[d] = true
	}
}

// saveStamps saves the stamps if they changed, taking first the times of
// the paths runs changed since the last save.
func (r *runner) saveStamps() {
	r.settleStamps()
	if r.opts.Cache != nil && r.stamper.dirty && r.opts.Cache.SaveStamps(r.stamper.stamps) == nil {
		r.stamper.dirty = false
	}
}

// settleStamps records the times the mirror's pending paths have now.
func (r *runner) settleStamps() {
	st := &r.stamper
	if r.opts.Cache == nil || len(st.pending) == 0 || st.synced == nil {
		return
	}
	for p := range st.pending {
		if d, ok := strings.CutPrefix(p, "/"); ok {
			st.stampDir(r.mirror, d, false)
			continue
		}
		e, ok := st.synced.Lookup(p)
		if !ok || !e.Mode.IsRegular() {
			st.forget(p)
			continue
		}
		st.stampFile(r.mirror, e, false)
	}
	st.pending = nil
}

// cacheRoom is what a run may add to its cache: the operator's bound of
// the worker's cache, or what the workspace's quota leaves the session's
// own. Files are bounded at one a 4 KiB of room (a tmpfs
// inode costs the kernel about 1 KiB), within 10,000 and 1,000,000.
func (r *runner) cacheRoom(wl memfs.Limits) sandbox.Bound {
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
func (r *runner) cacheKept(rep *sandbox.Report) {
	if c := r.opts.Cache; c != nil {
		c.Added(rep.CacheAdded.Bytes)
		return
	}
	r.ownCache += rep.CacheAdded.Bytes
}

// clearOwnCache empties the session's own cache.
func (r *runner) clearOwnCache() {
	// From the mirror's descriptor: the jail's user owns the directory
	// and could have put a link in the cache's place.
	if r.mirror.ClearCache() != nil {
		return // counted as full still: tried again before the next run
	}
	r.ownCache = 0
}
