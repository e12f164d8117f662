package runs

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox/mirror"
	"github.com/airlock-dev/airlock/session/runcache"
	"github.com/go-git/go-git/v5/plumbing"
)

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
func (r *Runner) stampFirstSync() {
	if c := r.opts.Cache; c != nil {
		r.stamper.stamps = c.Stamps()
		r.mirror.Time = r.stamper.fileTime
	}
}

// stamp follows a Sync of r's mirror to s.
func (r *Runner) stamp(s *memfs.Snapshot) {
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
// data (mirror.Mirror.Time): the one the worker's last server recorded
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
func (st *stamper) stampFile(m *mirror.Mirror, e memfs.Entry, first bool) {
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
func (st *stamper) stampDir(m *mirror.Mirror, d string, first bool) {
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
func (st *stamper) apply(m *mirror.Mirror, key, p, id string, size int64, first bool) {
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
func (r *Runner) saveStamps() {
	r.settleStamps()
	if r.opts.Cache != nil && r.stamper.dirty && r.opts.Cache.SaveStamps(r.stamper.stamps) == nil {
		r.stamper.dirty = false
	}
}

// settleStamps records the times the mirror's pending paths have now.
func (r *Runner) settleStamps() {
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
