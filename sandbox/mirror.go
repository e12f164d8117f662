package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/memfs"
)

// A Mirror is a session's workspace on a host tmpfs, for runs to see: its
// lower directory holds the workspace as of the last Sync, brought up to
// date in time proportional to what changed since; a run's writes go to
// the upper directory, which Changes reads back, in time proportional to
// what the run changed.
type Mirror struct {
	dir      string
	fd       int // dir, opened when it was made: every path of the mirror is reached through it (see beneath.go)
	uid, gid int
	chown    bool
	synced   *memfs.Snapshot // what lower holds; nil: nothing yet
	// redo lists paths lower may not hold as synced says (content that
	// could not be read, a run's change the workspace did not take): the
	// next Sync writes them again.
	redo map[string]bool

	trash   atomic.Int64   // names what discard moves aside
	removes sync.WaitGroup // discarded trees still being removed

	// Time, when set, gives each regular file the first Sync writes its
	// modification (and access) time. It is called
	// from several goroutines at once. (A worker's files keep their times
	// across servers, for the tools that judge a file unchanged by its
	// time: see session's stamper. Setting the time on the file as it is
	// written costs less than finding it again by its path.)
	Time func(e memfs.Entry, data []byte) time.Time
}

// NewMirror makes a mirror in a new private directory under parent (a
// tmpfs, such as /dev/shm).
func NewMirror(parent string) (*Mirror, error) {
	uid, _ := HostUser()
	perm := os.FileMode(0o700)
	if uid != os.Getuid() {
		// A root server's jails run as another user, who must be able to
		// pass through (not list) the parent.
		perm = 0o711
	}
	if err := os.MkdirAll(parent, perm); err != nil {
		return nil, err
	}
	if err := ownDir(parent); err != nil {
		return nil, err
	}
	if err := os.Chmod(parent, perm); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir) // empty; the error that stopped us is the one to tell
		return nil, err
	}
	m := &Mirror{dir: dir, fd: fd}
	m.uid, m.gid = HostUser()
	m.chown = m.uid != os.Getuid()
	for _, d := range []string{lowerDir, upperDir, workDir, rootDir, cacheDir} {
		if err := m.mkdir(d); err != nil {
			_ = m.Close() // the error that stopped us is the one to tell
			return nil, err
		}
	}
	if m.chown {
		// The jail's user must reach its directories; nobody else may.
		if err := unix.Fchown(fd, m.uid, m.gid); err != nil {
			_ = m.Close() // the error that stopped us is the one to tell
			return nil, err
		}
	}
	return m, nil
}

// ownDir refuses a mirrors' parent that is not a directory of this
// server's own: a root server's mirrors are reached through it, and
// another user who owned it could swap a mirror for a link.
func ownDir(p string) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s, where the runs' mirrors go, is not a directory of this user's (uid %d; it is %s of uid %d): "+
			"remove it, and airlock makes it again", p, os.Getuid(), fileType(uint32(st.Mode)), st.Uid)
	}
	return nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFREG:
		return "a file"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return "a special file"
}

// mkdir makes the directory rel of the mirror (owned by the jail's user);
// one already there is left as it is.
func (m *Mirror) mkdir(rel string) error {
	dir, name, done, err := parentAt(m.fd, rel)
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: rel, Err: err}
	}
	defer done()
	return m.mkdirAt(dir, name, rel)
}

// mkdirAt makes name in the directory dir (rel, for errors).
func (m *Mirror) mkdirAt(dir int, name, rel string) error {
	if err := unix.Mkdirat(dir, name, 0o755); err != nil {
		if err == unix.EEXIST {
			return nil
		}
		return &os.PathError{Op: "mkdir", Path: rel, Err: err}
	}
	if m.chown {
		if err := unix.Fchownat(dir, name, m.uid, m.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "chown", Path: rel, Err: err}
		}
	}
	return nil
}

// The mirror's directories, relative to it.
const (
	lowerDir = "lower"
	upperDir = "upper"
	workDir  = "work"
	rootDir  = "root"
	cacheDir = "cache"
)

// Dirs returns the directories a Spec takes: lower, upper, work and root.
func (m *Mirror) Dirs() (lower, upper, work, root string) {
	return filepath.Join(m.dir, lowerDir), filepath.Join(m.dir, upperDir), filepath.Join(m.dir, workDir), filepath.Join(m.dir, rootDir)
}

// Cache is the session's build cache directory, which outlives its runs.
func (m *Mirror) Cache() string { return filepath.Join(m.dir, cacheDir) }

// ClearCache empties the session's own cache directory: every entry
// removed from the cache directory's descriptor, following no link the
// jail's user may have put where the cache was or inside it.
func (m *Mirror) ClearCache() error {
	fd, err := openDirAt(m.fd, cacheDir)
	if err != nil {
		return &os.PathError{Op: "open", Path: cacheDir, Err: err}
	}
	f := os.NewFile(uintptr(fd), cacheDir)
	defer f.Close()
	ents, err := listDir(f)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := removeAllAt(fd, e.Name()); err != nil {
			return &os.PathError{Op: "remove", Path: path.Join(cacheDir, e.Name()), Err: err}
		}
	}
	return nil
}

// Close removes the mirror. (Its path is below a parent only this server
// may write to, so removing it by path follows nothing of the jail's
// user's: os.RemoveAll acts on each name from its directory's descriptor.)
func (m *Mirror) Close() error {
	m.removes.Wait()
	unix.Close(m.fd)
	return os.RemoveAll(m.dir)
}

// discard removes the tree at rel out of the way of what comes next: it is
// renamed aside at once and removed in the background, so that a run that
// deleted ten thousand files does not wait for the second ten thousand
// unlinks.
func (m *Mirror) discard(rel string) error {
	dir, name, done, err := parentAt(m.fd, rel)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR {
			return nil // nothing there: a parent is gone, or is a file
		}
		return &os.PathError{Op: "discard", Path: rel, Err: err}
	}
	defer done()
	return m.discardAt(dir, name, rel)
}

// discardAt is discard of name in the directory dir (rel, for errors).
func (m *Mirror) discardAt(dir int, name, rel string) error {
	aside := fmt.Sprintf("trash-%d", m.trash.Add(1))
	if err := unix.Renameat(dir, name, m.fd, aside); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		if err := removeAllAt(dir, name); err != nil {
			return &os.PathError{Op: "remove", Path: rel, Err: err}
		}
		return nil
	}
	m.removes.Add(1)
	go func() {
		defer m.removes.Done()
		// What stays aside is removed with the mirror (Close).
		_ = removeAllAt(m.fd, aside)
	}()
	return nil
}

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

// removeAll removes rel and what is below it; nothing there (a parent
// gone, or a file) is not an error.
func (m *Mirror) removeAll(rel string) error {
	dir, name, done, err := parentAt(m.fd, rel)
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return nil
	}
	if err == nil {
		err = removeAllAt(dir, name)
		done()
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
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

// Promote makes lower hold after (the workspace once a run's changes came
// in, the run having started on start, which lower holds) by moving what
// the run wrote from upper into lower, rather than writing it all again
// at the next Sync: each of changes (as Changes read them) that after
// holds exactly is renamed into lower (a file or a link), removed (a
// removal) or made (a directory). Whatever else changed from start to
// after (a change the workspace refused, a path another tool changed
// meanwhile) is written at the next Sync. Reset follows it.
func (m *Mirror) Promote(start, after *memfs.Snapshot, changes []Change) {
	if m.synced == nil || !m.synced.Same(start) {
		return // lower is not what the run saw: the next Sync diffs as usual
	}
	promoted := map[string]bool{}
	var gone []string                 // directories removed whole, with what was in them
	dirs := map[string]bool{"": true} // directories of lower known to be directories
	// The changes come in path order: the files of one directory one
	// after the other, each renamed between the same two directories.
	up, low := m.dirCache(), m.dirCache()
	defer up.close()
	defer low.close()
	for i := 0; i < len(changes); i++ {
		c := changes[i]
		rel := lowerDir + "/" + c.Path
		switch c.Kind {
		case Removed:
			if _, ok := after.Lookup(c.Path); ok || after.IsDir(c.Path) {
				continue
			}
			low.close()
			if m.discard(rel) == nil {
				promoted[c.Path] = true
				gone = append(gone, c.Path+"/")
			}
		case MadeDir, Replaced:
			if !after.IsDir(c.Path) {
				continue
			}
			low.close()
			if st, err := m.lstat(rel); err == nil && (c.Kind == Replaced || st.Mode&unix.S_IFMT != unix.S_IFDIR) {
				// If it stays, making the directory in its place
				// fails and says so.
				_ = m.discard(rel)
			}
			if n := m.promoteDir(after, changes[i:], dirs, promoted); n > 0 {
				// A directory the run made, which the workspace took
				// whole: moved in one rename.
				up.close()
				i += n - 1
				continue
			}
			if m.mkdir(rel) == nil {
				dirs[c.Path] = true
			}
		case Wrote, Linked:
			if c.Other != "" || !holds(after, c) || m.lowerDir(path.Dir(c.Path), dirs, low) != nil {
				continue
			}
			parent, name := path.Split(c.Path)
			ufd, err := up.get(upperDir + "/" + parent)
			if err != nil {
				continue
			}
			lfd, err := low.get(lowerDir + "/" + parent)
			if err != nil {
				continue
			}
			if unix.Renameat(ufd, name, lfd, name) != nil {
				// A directory in the way (a rename replaces anything else).
				if removeAllAt(lfd, name) != nil || unix.Renameat(ufd, name, lfd, name) != nil {
					continue
				}
			}
			// The workspace keeps 0644 or 0755: lower is what it holds.
			if e, _ := after.Lookup(c.Path); c.Kind == Wrote && c.Mode.Perm() != e.Mode.Perm() && chmodAt(lfd, name, uint32(e.Mode.Perm())) != nil {
				continue
			}
			promoted[c.Path] = true
		}
	}
	if m.redo == nil {
		m.redo = map[string]bool{}
	}
	sort.Strings(gone)
	for _, d := range start.Diff(after) {
		// gone is sorted, so the one directory that may hold d.Path is
		// the last one not after it.
		i := sort.SearchStrings(gone, d.Path)
		if !promoted[d.Path] && !(i > 0 && strings.HasPrefix(d.Path, gone[i-1])) {
			m.redo[d.Path] = true
		}
	}
	m.synced = after
}

// promoteDir moves the directory cs[0] made by the run, with everything in
// it, from upper into lower in one rename, when lower has nothing there
// (it was discarded, or never was) and after holds exactly every file and
// link in it. It returns how many of cs it promoted (0: none, the caller
// goes entry by entry).
func (m *Mirror) promoteDir(after *memfs.Snapshot, cs []Change, dirs, promoted map[string]bool) int {
	d := cs[0]
	prefix := d.Path + "/"
	n := 1
	for n < len(cs) && strings.HasPrefix(cs[n].Path, prefix) {
		c := cs[n]
		switch c.Kind {
		case Wrote, Linked:
			if c.Other != "" || !holds(after, c) {
				return 0
			}
			if e, _ := after.Lookup(c.Path); c.Kind == Wrote && c.Mode.Perm() != e.Mode.Perm() {
				return 0
			}
		case MadeDir:
			if !after.IsDir(c.Path) {
				return 0
			}
		default:
			return 0 // a removal under it: lower had something here
		}
		n++
	}
	if _, err := m.lstat(lowerDir + "/" + d.Path); err != unix.ENOENT || m.lowerDir(path.Dir(d.Path), dirs, nil) != nil {
		return 0
	}
	if m.rename(upperDir+"/"+d.Path, lowerDir+"/"+d.Path) != nil {
		return 0
	}
	dirs[d.Path] = true
	for _, c := range cs[:n] {
		promoted[c.Path] = true
		if c.Kind == MadeDir {
			dirs[c.Path] = true
		}
	}
	return n
}

// holds reports whether s holds exactly what the run's change c wrote.
func holds(s *memfs.Snapshot, c Change) bool {
	e, ok := s.Lookup(c.Path)
	if !ok || e.Lazy() || e.Size != int64(len(c.Data)) || (c.Kind == Linked) != (e.Mode&fs.ModeSymlink != 0) {
		return false
	}
	data, err := e.Content()
	return err == nil && bytes.Equal(data, c.Data)
}

// lowerDir makes sure dir (relative to lower) is a directory of lower,
// replacing a file or link in the way; dirs remembers what is known to be
// one. Removing something drops what low holds (nil: nothing).
func (m *Mirror) lowerDir(dir string, dirs map[string]bool, low *dirCache) error {
	if dir == "." {
		dir = ""
	}
	if dirs[dir] {
		return nil
	}
	if err := m.lowerDir(path.Dir(dir), dirs, low); err != nil {
		return err
	}
	rel := lowerDir + "/" + dir
	parent, name, done, err := parentAt(m.fd, rel)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	defer done()
	if st, err := lstatAt(parent, name); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		low.close()
		_ = removeAt(parent, name) // if it stays, mkdirAt fails and says so
	}
	if err := m.mkdirAt(parent, name, rel); err != nil {
		return err
	}
	dirs[dir] = true
	return nil
}

// lstat is lstat of rel, through the mirror's directories.
func (m *Mirror) lstat(rel string) (unix.Stat_t, error) {
	dir, name, done, err := parentAt(m.fd, rel)
	if err != nil {
		return unix.Stat_t{}, err
	}
	defer done()
	return lstatAt(dir, name)
}

// rename moves from to to, both of the mirror.
func (m *Mirror) rename(from, to string) error {
	fdir, fname, fdone, err := parentAt(m.fd, from)
	if err != nil {
		return err
	}
	defer fdone()
	tdir, tname, tdone, err := parentAt(m.fd, to)
	if err != nil {
		return err
	}
	defer tdone()
	return unix.Renameat(fdir, fname, tdir, tname)
}

// chmodAt sets the mode of the file name in the directory dir on its open
// descriptor: chmod(2) by name would follow a link put there meanwhile.
func chmodAt(dir int, name string, perm uint32) error {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, perm)
}

// dirCache holds the descriptor of the last directory of the mirror asked
// for, while one directory's files are moved one after another.
type dirCache struct {
	root int
	rel  string
	fd   int // -1: none
}

func (m *Mirror) dirCache() *dirCache { return &dirCache{root: m.fd, fd: -1} }

// get opens rel (slash-terminated or not), or returns it open already.
func (c *dirCache) get(rel string) (int, error) {
	rel = strings.TrimSuffix(rel, "/")
	if c.fd >= 0 && c.rel == rel {
		return c.fd, nil
	}
	c.close()
	fd, err := openDirAt(c.root, rel)
	if err != nil {
		return -1, err
	}
	c.rel, c.fd = rel, fd
	return fd, nil
}

// close forgets the directory (nil: nothing to forget).
func (c *dirCache) close() {
	if c != nil && c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// Reset empties the upper and work directories for the next run.
func (m *Mirror) Reset() error {
	for _, d := range []string{upperDir, workDir} {
		if err := m.discard(d); err != nil {
			return err
		}
		if err := m.mkdir(d); err != nil {
			return err
		}
	}
	return nil
}

// ChangeKind is what a run did at a path.
type ChangeKind int

const (
	Wrote    ChangeKind = iota // a regular file, with its content and mode
	Linked                     // a symlink, with its target
	Removed                    // the path and anything under it are gone
	MadeDir                    // a directory
	Replaced                   // a directory that replaced what lower had there (opaque): what lower had under it is gone
)

// Change is one thing a run did, as its overlay's upper layer records it.
type Change struct {
	Path string // slash-separated, relative to the workspace
	Kind ChangeKind
	Mode fs.FileMode
	Data []byte // a file's content or a symlink's target
	// Other is set for what the workspace cannot hold (a device, a socket,
	// a FIFO): the path and what it is.
	Other string
}

// Changes reads what the last run changed, in the order a replay needs
// (a directory before what is in it). Files larger than maxFile are listed
// with Data nil and Other saying so; the caller refuses them. The walk
// reads directories only (their entries say which are regular files);
// the files are then read by a goroutine per core.
//
// Files are read while their sizes together stay within maxTotal (0: no
// bound), the most the workspace can hold: past it Changes stops reading
// and fails with ErrChangesOverQuota. The run's quota watch counts the
// blocks its files take, so sparse files (truncate -s) cost it nothing,
// and reading them all at their full size held 2.6 GB for a run of 300
// sparse 9 MB files under a 512 MiB quota.
func (m *Mirror) Changes(maxFile, maxTotal int64) ([]Change, error) {
	var out []Change
	var files []int // indexes in out of regular files, to read
	// walk lists the directory rel of upper, whose Change is out[self]
	// (-1: upper itself); each directory is read through its own
	// descriptor, closed before the walk goes down into the next.
	var walk func(rel string, self int) error
	walk = func(rel string, self int) error {
		ents, isOpaque, err := m.readUpperDir(rel)
		if err != nil {
			return err
		}
		if isOpaque && self >= 0 {
			out[self].Kind = Replaced
		}
		for _, e := range ents {
			r := e.name
			if rel != "" {
				r = rel + "/" + r
			}
			switch mode := e.st.Mode; {
			case e.regular:
				out = append(out, Change{Path: r, Kind: Wrote})
				files = append(files, len(out)-1)
			case mode&unix.S_IFMT == unix.S_IFCHR && e.st.Rdev == 0:
				// An overlay whiteout: a character device 0:0.
				out = append(out, Change{Path: r, Kind: Removed})
			case mode&unix.S_IFMT == unix.S_IFDIR:
				out = append(out, Change{Path: r, Kind: MadeDir, Mode: fs.FileMode(mode & 0o777)})
				if err := walk(r, len(out)-1); err != nil {
					return err
				}
			case mode&unix.S_IFMT == unix.S_IFLNK:
				out = append(out, Change{Path: r, Kind: Linked, Mode: fs.ModeSymlink | 0o777, Data: []byte(e.target)})
			default:
				out = append(out, Change{Path: r, Kind: Wrote, Other: fileType(uint32(mode))})
			}
		}
		return nil
	}
	if err := walk("", -1); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	var total atomic.Int64 // the sizes of the files read so far
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if maxTotal > 0 && total.Load() > maxTotal {
					continue // over already: nothing more is read
				}
				if err := m.readChange(&out[i], maxFile, &total, maxTotal); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, first
}

// ErrChangesOverQuota: the files a run wrote are larger in all than the
// workspace may hold; they were not read.
var ErrChangesOverQuota = errors.New("the files the run wrote are larger in all than the workspace may hold")

// upperEntry is a name in a directory of upper: a regular file, or what
// lstat says of it (and a link's target).
type upperEntry struct {
	name    string
	regular bool
	st      unix.Stat_t
	target  string
}

// readUpperDir lists the directory rel of upper, and whether overlayfs
// marked it opaque (it replaced what lower had there).
func (m *Mirror) readUpperDir(rel string) ([]upperEntry, bool, error) {
	dir := upperDir
	if rel != "" {
		dir += "/" + rel
	}
	fd, err := openDirAt(m.fd, dir)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(fd, "user.overlay.opaque", buf)
	isOpaque := err == nil && n > 0 && buf[0] == 'y'
	ents, err := listDir(f)
	if err != nil {
		return nil, false, &os.PathError{Op: "read", Path: dir, Err: err}
	}
	out := make([]upperEntry, len(ents))
	for i, d := range ents {
		out[i] = upperEntry{name: d.Name(), regular: d.Type().IsRegular()}
		if out[i].regular {
			continue
		}
		if out[i].st, err = lstatAt(fd, d.Name()); err != nil {
			return nil, false, &os.PathError{Op: "lstat", Path: dir + "/" + d.Name(), Err: err}
		}
		if out[i].st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if out[i].target, err = readlinkAt(fd, d.Name()); err != nil {
				return nil, false, &os.PathError{Op: "readlink", Path: dir + "/" + d.Name(), Err: err}
			}
		}
	}
	return out, isOpaque, nil
}

// readChange reads a regular file of the upper layer into c (its mode
// and content, or why it is not taken), without following a link.
func (m *Mirror) readChange(c *Change, maxFile int64, total *atomic.Int64, maxTotal int64) error {
	p := upperDir + "/" + c.Path
	fd, err := openBeneath(m.fd, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: p, Err: err}
	}
	c.Mode = fs.FileMode(st.Mode & 0o777)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		c.Other = "not a regular file"
		return nil
	case st.Size > maxFile:
		c.Other = fmt.Sprintf("a %d-byte file", st.Size)
		return nil
	}
	if t := total.Add(st.Size); maxTotal > 0 && t > maxTotal {
		return fmt.Errorf("%w: more than %d bytes, at %s", ErrChangesOverQuota, maxTotal, c.Path)
	}
	c.Data = make([]byte, st.Size)
	for n := 0; n < len(c.Data); {
		k, err := unix.Read(fd, c.Data[n:])
		if err != nil {
			return &os.PathError{Op: "read", Path: p, Err: err}
		}
		if k == 0 {
			return &os.PathError{Op: "read", Path: p, Err: io.ErrUnexpectedEOF}
		}
		n += k
	}
	return nil
}

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
