package mirror

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/memfs"
)

// Sync makes lower hold s, writing only the files and symlinks that differ
// from what it held, and returns how many paths it wrote or removed. A file
// whose content cannot be read (a lazy file its repository no longer has)
// does not stop the rest: it is left out of lower, returned with why, and
// tried again at the next Sync.
func (m *Mirror) Sync(ctx context.Context, s *memfs.Snapshot) (int, []memfs.Refused, error) {
	var es []memfs.Entry
	n := 0
	if m.synced == nil {
		// An empty lower: the directories first, in order, then every
		// file, written as its content comes (from several goroutines:
		// nothing is in the way of another).
		made := map[string]bool{"": true}
		err := s.Walk(func(e memfs.Entry) error {
			if err := m.mkdirs(path.Dir(e.Path), made); err != nil {
				return fmt.Errorf("mirroring %s: %w", e.Path, err)
			}
			es = append(es, e)
			return nil
		})
		if err != nil {
			return 0, nil, err
		}
		unread, err := m.writeAll(ctx, es, false)
		if err != nil {
			// Half a lower is no base for the next Sync: it starts
			// from empty again.
			if derr := m.discard(lowerDir); derr != nil {
				return 0, nil, errors.Join(err, derr)
			}
			return 0, nil, errors.Join(err, m.mkdir(lowerDir))
		}
		m.synced = s
		return len(es), unread, nil
	}
	changes := m.synced.Diff(s)
	if len(m.redo) > 0 {
		// Left out last time, or not as synced says.
		for _, c := range changes {
			delete(m.redo, c.Path)
		}
		for p := range m.redo {
			changes = append(changes, memfs.Change{Path: p, Kind: change.Update})
		}
	}
	// Removals first: what a file left may be where a directory goes.
	for _, c := range changes {
		e, ok := s.Lookup(c.Path)
		if !ok {
			// A parent that is a file now means the path is gone too.
			if err := m.removeAll(lowerDir + "/" + c.Path); err != nil {
				return 0, nil, err
			}
			n++
			continue
		}
		es = append(es, e)
	}
	unread, err := m.writeAll(ctx, es, true)
	if err != nil {
		return 0, nil, err
	}
	m.synced = s
	return n + len(es), unread, nil
}

// mkdirs makes dir (relative to lower) and its parents, as the jail's
// user, remembering what it made.
func (m *Mirror) mkdirs(dir string, made map[string]bool) error {
	if dir == "." || made[dir] {
		return nil
	}
	if err := m.mkdirs(path.Dir(dir), made); err != nil {
		return err
	}
	made[dir] = true
	return m.mkdir(lowerDir + "/" + dir)
}

// writeAll writes es into lower, their content read together (a lazy
// base's is streamed from its repository). With replace, whatever is in
// the way of an entry is removed first, one entry at a time; without,
// lower is known to hold none of them and their directories exist. It
// returns the entries whose content could not be read, and remembers
// them for the next Sync.
func (m *Mirror) writeAll(ctx context.Context, es []memfs.Entry, replace bool) ([]memfs.Refused, error) {
	var mu sync.Mutex
	var unread []memfs.Refused
	err := memfs.LoadEach(ctx, es, false, func(e memfs.Entry, data []byte, err error) error {
		if err != nil {
			mu.Lock()
			unread = append(unread, memfs.Refused{Path: e.Path, Err: err})
			mu.Unlock()
			return nil
		}
		if replace {
			mu.Lock()
			defer mu.Unlock()
			err = m.replace(e, data)
		} else {
			err = m.writeTimed(lowerDir+"/"+e.Path, e, data)
		}
		if err != nil {
			return fmt.Errorf("mirroring %s: %w", e.Path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.redo = map[string]bool{}
	for _, u := range unread {
		m.redo[u.Path] = true
	}
	sort.Slice(unread, func(i, j int) bool { return unread[i].Path < unread[j].Path })
	return unread, nil
}

// replace puts e at its path in lower, replacing whatever is in the way.
// It walks from lower one directory at a time, each opened from the one
// before without following a link; a file or a link where a directory is
// now is removed, a missing directory made.
func (m *Mirror) replace(e memfs.Entry, data []byte) error {
	comps := strings.Split(e.Path, "/")
	dir, err := openDirAt(m.fd, lowerDir)
	if err != nil {
		return &os.PathError{Op: "open", Path: lowerDir, Err: err}
	}
	defer func() { unix.Close(dir) }()
	rel := lowerDir
	for _, c := range comps[:len(comps)-1] {
		rel += "/" + c
		next, err := unix.Openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOTDIR || err == unix.ELOOP || err == unix.ENOENT {
			// A file or a link where a directory is now, or nothing.
			if err := removeAt(dir, c); err != nil {
				return &os.PathError{Op: "remove", Path: rel, Err: err}
			}
			if err := m.mkdirAt(dir, c, rel); err != nil {
				return err
			}
			next, err = unix.Openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: rel, Err: err}
		}
		unix.Close(dir)
		dir = next
	}
	name := comps[len(comps)-1]
	rel = lowerDir + "/" + e.Path
	if err := removeAllAt(dir, name); err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return m.writeAt(dir, name, rel, e, data, nil)
}

// writeTimed writes e at rel, which does not exist and whose directory
// does, giving a regular file the time m.Time says.
func (m *Mirror) writeTimed(rel string, e memfs.Entry, data []byte) error {
	if e.Mode&fs.ModeSymlink != 0 {
		dir, name, done, err := parentAt(m.fd, rel)
		if err != nil {
			return &os.PathError{Op: "open", Path: rel, Err: err}
		}
		defer done()
		return m.writeAt(dir, name, rel, e, data, nil)
	}
	var also func(fd int) error
	if m.Time != nil && e.Mode.IsRegular() {
		also = func(fd int) error { return futimens(fd, m.Time(e, data)) }
	}
	// One openat2 from the mirror's root: no directory descriptor needed.
	fd, err := openBeneath(m.fd, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(e.Mode.Perm()))
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	defer unix.Close(fd)
	return m.fill(fd, rel, e, data, also)
}

// writeAt creates name, which does not exist, in the directory dir (rel,
// for errors), holding e; also, if set, is called on a regular file's
// descriptor once it is written.
func (m *Mirror) writeAt(dir int, name, rel string, e memfs.Entry, data []byte, also func(fd int) error) error {
	if e.Mode&fs.ModeSymlink != 0 {
		if err := unix.Symlinkat(string(data), dir, name); err != nil {
			return &os.PathError{Op: "symlink", Path: rel, Err: err}
		}
		if m.chown {
			if err := unix.Fchownat(dir, name, m.uid, m.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return &os.PathError{Op: "chown", Path: rel, Err: err}
			}
		}
		return nil
	}
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(e.Mode.Perm()))
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	defer unix.Close(fd)
	return m.fill(fd, rel, e, data, also)
}

// fill writes data into the new regular file fd, gives it e's mode and
// the jail's user, and calls also on it.
func (m *Mirror) fill(fd int, rel string, e memfs.Entry, data []byte, also func(fd int) error) error {
	perm := uint32(e.Mode.Perm())
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			return &os.PathError{Op: "write", Path: rel, Err: err}
		}
		data = data[n:]
	}
	// The umask may have taken bits the mode has; the jail's user must
	// own what it may change.
	if perm&^umask != perm {
		if err := unix.Fchmod(fd, perm); err != nil {
			return &os.PathError{Op: "chmod", Path: rel, Err: err}
		}
	}
	if m.chown {
		if err := unix.Fchown(fd, m.uid, m.gid); err != nil {
			return &os.PathError{Op: "chown", Path: rel, Err: err}
		}
	}
	if also != nil {
		if err := also(fd); err != nil {
			return &os.PathError{Op: "utimes", Path: rel, Err: err}
		}
	}
	return nil
}

// umask is the process's, read once (reading it means setting it).
var umask = func() uint32 {
	u := unix.Umask(0)
	unix.Umask(u)
	return uint32(u)
}()

// ReadLowerDir lists the directory dir (slash-separated; "" is the root)
// of what runs see of the workspace, sorted by name.
func (m *Mirror) ReadLowerDir(dir string) ([]fs.DirEntry, error) {
	rel := path.Join(lowerDir, dir)
	fd, err := openDirAt(m.fd, rel)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	return listDir(f)
}

// LowerTime gives p (a file, a link or a directory of what runs see;
// "" is the root) the access and modification time t, unless t is zero,
// and returns its modification time.
func (m *Mirror) LowerTime(p string, t time.Time) (time.Time, error) {
	rel := path.Join(lowerDir, p)
	dir, name, done, err := parentAt(m.fd, rel)
	if err != nil {
		return time.Time{}, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	defer done()
	if !t.IsZero() {
		ts := unix.NsecToTimespec(t.UnixNano())
		if err := unix.UtimesNanoAt(dir, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return time.Time{}, &os.PathError{Op: "utimes", Path: rel, Err: err}
		}
		return t, nil
	}
	st, err := lstatAt(dir, name)
	if err != nil {
		return time.Time{}, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return time.Unix(st.Mtim.Unix()), nil
}
