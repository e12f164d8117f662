package session

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
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
	stamps map[string]runcache.Stamp
	synced *memfs.Snapshot // what the mirror held at the last stamp
	dirty  bool
}

// stamp follows a Sync of r's mirror to s.
func (r *runner) stamp(s *memfs.Snapshot) {
	c, st := r.opts.Cache, &r.stamper
	if c == nil {
		return
	}
	first := st.synced == nil
	if first {
		st.stamps = c.Stamps()
	}
	var es []memfs.Entry
	dirs := map[string]bool{"": true}
	if first {
		s.Walk(func(e memfs.Entry) error {
			es = append(es, e)
			return nil
		})
	} else {
		for _, ch := range st.synced.Diff(s) {
			if e, ok := s.Lookup(ch.Path); ok {
				es = append(es, e)
			} else {
				st.forget(ch.Path)
				addDirs(dirs, ch.Path)
			}
		}
	}
	st.synced = s
	lower, _, _, _ := r.mirror.Dirs()
	for _, e := range es {
		addDirs(dirs, e.Path)
		if !e.Mode.IsRegular() {
			continue
		}
		id := e.ID
		if id == ([20]byte{}) {
			data, err := e.Content()
			if err != nil {
				continue
			}
			id = plumbing.ComputeHash(plumbing.BlobObject, data)
		}
		st.apply(e.Path, filepath.Join(lower, filepath.FromSlash(e.Path)), hex.EncodeToString(id[:]), e.Size, first)
	}
	// A directory's time counts too (go test hashes a directory it read
	// by its entries' and its own stat): keyed by its listing, under a
	// key no file path has.
	for d := range dirs {
		p := filepath.Join(lower, filepath.FromSlash(d))
		ents, err := os.ReadDir(p)
		if err != nil {
			st.forget("/" + d)
			continue
		}
		h := sha1.New()
		for _, e := range ents {
			fmt.Fprintf(h, "%s\x00%v\x00", e.Name(), e.Type())
		}
		st.apply("/"+d, p, hex.EncodeToString(h.Sum(nil)), int64(len(ents)), first)
	}
	if first {
		r.saveStamps()
	}
}

// apply gives the mirror's p, which holds content id of size at key, the
// time recorded for that content at a first sync; otherwise it records
// the time p has.
func (st *stamper) apply(key, p, id string, size int64, first bool) {
	if old, ok := st.stamps[key]; first && ok && old.ID == id && old.Size == size {
		t := time.Unix(0, old.Time)
		if os.Chtimes(p, t, t) == nil {
			return
		}
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	st.stamps[key] = runcache.Stamp{ID: id, Size: size, Time: fi.ModTime().UnixNano()}
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

// saveStamps saves the stamps if they changed.
func (r *runner) saveStamps() {
	if r.opts.Cache != nil && r.stamper.dirty && r.opts.Cache.SaveStamps(r.stamper.stamps) == nil {
		r.stamper.dirty = false
	}
}
