package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

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
	uid, gid int
	chown    bool
	synced   *memfs.Snapshot // what lower holds; nil: nothing yet
	unread   map[string]bool // paths of synced left out: their content could not be read
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
	if err := os.Chmod(parent, perm); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return nil, err
	}
	m := &Mirror{dir: dir}
	m.uid, m.gid = HostUser()
	m.chown = m.uid != os.Getuid()
	for _, d := range []string{"lower", "upper", "work", "root", "cache"} {
		if err := m.mkdir(filepath.Join(dir, d)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if m.chown {
		// The jail's user must reach its directories; nobody else may.
		os.Chown(dir, m.uid, m.gid)
	}
	return m, nil
}

func (m *Mirror) mkdir(p string) error {
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if m.chown {
		return os.Lchown(p, m.uid, m.gid)
	}
	return nil
}

// Dirs returns the directories a Spec takes: lower, upper, work and root.
func (m *Mirror) Dirs() (lower, upper, work, root string) {
	return filepath.Join(m.dir, "lower"), filepath.Join(m.dir, "upper"), filepath.Join(m.dir, "work"), filepath.Join(m.dir, "root")
}

// Cache is the session's build cache directory, which outlives its runs.
func (m *Mirror) Cache() string { return filepath.Join(m.dir, "cache") }

// Close removes the mirror.
func (m *Mirror) Close() error { return os.RemoveAll(m.dir) }

// Sync makes lower hold s, writing only the files and symlinks that differ
// from what it held, and returns how many paths it wrote or removed. A file
// whose content cannot be read (a lazy file its repository no longer has)
// does not stop the rest: it is left out of lower, returned with why, and
// tried again at the next Sync.
func (m *Mirror) Sync(ctx context.Context, s *memfs.Snapshot) (int, []memfs.Refused, error) {
	lower, _, _, _ := m.Dirs()
	var es []memfs.Entry
	n := 0
	if m.synced == nil {
		// An empty lower: the directories first, in order, then every
		// file, written as its content comes (from several goroutines:
		// nothing is in the way of another).
		made := map[string]bool{"": true}
		err := s.Walk(func(e memfs.Entry) error {
			if err := m.mkdirs(lower, path.Dir(e.Path), made); err != nil {
				return fmt.Errorf("mirroring %s: %w", e.Path, err)
			}
			es = append(es, e)
			return nil
		})
		if err != nil {
			return 0, nil, err
		}
		unread, err := m.writeAll(ctx, lower, es, false)
		if err != nil {
			// Half a lower is no base for the next Sync: it starts
			// from empty again.
			os.RemoveAll(lower)
			m.mkdir(lower)
			return 0, nil, err
		}
		m.synced = s
		return len(es), unread, nil
	}
	changes := m.synced.Diff(s)
	for p := range m.unread {
		// Left out last time: it may be readable now.
		if !slices.ContainsFunc(changes, func(c memfs.Change) bool { return c.Path == p }) {
			changes = append(changes, memfs.Change{Path: p, Kind: memfs.Modified})
		}
	}
	// Removals first: what a file left may be where a directory goes.
	for _, c := range changes {
		e, ok := s.Lookup(c.Path)
		if !ok {
			if err := os.RemoveAll(filepath.Join(lower, filepath.FromSlash(c.Path))); err != nil {
				return 0, nil, err
			}
			n++
			continue
		}
		es = append(es, e)
	}
	unread, err := m.writeAll(ctx, lower, es, true)
	if err != nil {
		return 0, nil, err
	}
	m.synced = s
	return n + len(es), unread, nil
}

// mkdirs makes dir (relative to base) and its parents, as the jail's user,
// remembering what it made.
func (m *Mirror) mkdirs(base, dir string, made map[string]bool) error {
	if dir == "." || made[dir] {
		return nil
	}
	if err := m.mkdirs(base, path.Dir(dir), made); err != nil {
		return err
	}
	made[dir] = true
	return m.mkdir(filepath.Join(base, filepath.FromSlash(dir)))
}

// writeAll writes es under base, their content read together (a lazy
// base's is streamed from its repository). With replace, whatever is in
// the way of an entry is removed first, one entry at a time; without,
// base is known to hold none of them and their directories exist. It
// returns the entries whose content could not be read, and remembers
// them for the next Sync.
func (m *Mirror) writeAll(ctx context.Context, base string, es []memfs.Entry, replace bool) ([]memfs.Refused, error) {
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
			err = m.replace(base, e, data)
		} else {
			err = m.write(filepath.Join(base, filepath.FromSlash(e.Path)), e, data)
		}
		if err != nil {
			return fmt.Errorf("mirroring %s: %w", e.Path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.unread = map[string]bool{}
	for _, u := range unread {
		m.unread[u.Path] = true
	}
	sort.Slice(unread, func(i, j int) bool { return unread[i].Path < unread[j].Path })
	return unread, nil
}

// replace puts e at its path under base, replacing whatever is in the way.
func (m *Mirror) replace(base string, e memfs.Entry, data []byte) error {
	comps := strings.Split(e.Path, "/")
	dir := base
	for _, c := range comps[:len(comps)-1] {
		dir = filepath.Join(dir, c)
		fi, err := os.Lstat(dir)
		if err == nil && !fi.IsDir() {
			os.Remove(dir) // a file where a directory is now
		}
		if err := m.mkdir(dir); err != nil {
			return err
		}
	}
	p := filepath.Join(base, filepath.FromSlash(e.Path))
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	} else if err == nil {
		os.Remove(p)
	}
	return m.write(p, e, data)
}

// write creates p, which does not exist, holding e.
func (m *Mirror) write(p string, e memfs.Entry, data []byte) error {
	if e.Mode&fs.ModeSymlink != 0 {
		if err := os.Symlink(string(data), p); err != nil {
			return err
		}
		if m.chown {
			return os.Lchown(p, m.uid, m.gid)
		}
		return nil
	}
	perm := uint32(e.Mode.Perm())
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return &os.PathError{Op: "create", Path: p, Err: err}
	}
	defer unix.Close(fd)
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			return &os.PathError{Op: "write", Path: p, Err: err}
		}
		data = data[n:]
	}
	// The umask may have taken bits the mode has; the jail's user must
	// own what it may change.
	if perm&^umask != perm {
		if err := unix.Fchmod(fd, perm); err != nil {
			return &os.PathError{Op: "chmod", Path: p, Err: err}
		}
	}
	if m.chown {
		if err := unix.Fchown(fd, m.uid, m.gid); err != nil {
			return &os.PathError{Op: "chown", Path: p, Err: err}
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

// Reset empties the upper and work directories for the next run.
func (m *Mirror) Reset() error {
	_, upper, work, _ := m.Dirs()
	for _, d := range []string{upper, work} {
		if err := os.RemoveAll(d); err != nil {
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
// with Data nil and Other saying so; the caller refuses them.
func (m *Mirror) Changes(maxFile int64) ([]Change, error) {
	_, upper, _, _ := m.Dirs()
	var out []Change
	err := filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == upper {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, upper+string(filepath.Separator)))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := fi.Mode(); {
		case mode&fs.ModeCharDevice != 0 && isWhiteout(fi):
			out = append(out, Change{Path: rel, Kind: Removed})
		case mode.IsDir():
			kind := MadeDir
			if opaque(p) {
				kind = Replaced
			}
			out = append(out, Change{Path: rel, Kind: kind, Mode: mode.Perm()})
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, Change{Path: rel, Kind: Linked, Mode: fs.ModeSymlink | 0o777, Data: []byte(target)})
		case mode.IsRegular():
			c := Change{Path: rel, Kind: Wrote, Mode: mode.Perm()}
			if fi.Size() > maxFile {
				c.Other = fmt.Sprintf("a %d-byte file", fi.Size())
			} else if c.Data, err = readNoFollow(p); err != nil {
				return err
			}
			out = append(out, c)
		default:
			out = append(out, Change{Path: rel, Kind: Wrote, Other: fmt.Sprintf("a %v", mode.Type())})
		}
		return nil
	})
	return out, err
}

// isWhiteout reports an overlay whiteout: a character device 0:0.
func isWhiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

func opaque(p string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(p, "user.overlay.opaque", buf)
	return err == nil && n > 0 && buf[0] == 'y'
}

func readNoFollow(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
