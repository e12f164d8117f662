package mirror

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

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
	// time: see the runs' stamper. Setting the time on the file as it is
	// written costs less than finding it again by its path.)
	Time func(e memfs.Entry, data []byte) time.Time
}

// New makes a mirror in a new private directory under parent (a tmpfs,
// such as /dev/shm), for jails acting as the host user uid:gid
// (sandbox.HostUser): they own what is in it.
func New(parent string, uid, gid int) (*Mirror, error) {
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
	m := &Mirror{dir: dir, fd: fd, uid: uid, gid: gid}
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
