package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// prefetchFiles is how many files Sync asks to be read ahead at a time.
const prefetchFiles = 256

// Sync makes lower hold s, writing only the files and symlinks that differ
// from what it held, and returns how many it wrote or removed.
func (m *Mirror) Sync(s *memfs.Snapshot) (int, error) {
	lower, _, _, _ := m.Dirs()
	var changes []memfs.Change
	if m.synced == nil {
		s.Walk(func(e memfs.Entry) error {
			changes = append(changes, memfs.Change{Path: e.Path, Kind: memfs.Created})
			return nil
		})
	} else {
		changes = m.synced.Diff(s)
	}
	for i, c := range changes {
		if i%prefetchFiles == 0 {
			// A base pulled from a remote reads the next files' lazy
			// content in one round trip, not one for each.
			var es []memfs.Entry
			for _, c := range changes[i:min(i+prefetchFiles, len(changes))] {
				if e, ok := s.Lookup(c.Path); ok {
					es = append(es, e)
				}
			}
			memfs.Prefetch(es)
		}
		p := filepath.Join(lower, filepath.FromSlash(c.Path))
		e, ok := s.Lookup(c.Path)
		if !ok {
			if err := os.RemoveAll(p); err != nil {
				return 0, err
			}
			continue
		}
		if err := m.write(lower, c.Path, e); err != nil {
			return 0, fmt.Errorf("mirroring %s: %w", c.Path, err)
		}
	}
	m.synced = s
	return len(changes), nil
}

// write puts e at rel under base, replacing whatever is in the way.
func (m *Mirror) write(base, rel string, e memfs.Entry) error {
	comps := strings.Split(rel, "/")
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
	p := filepath.Join(base, filepath.FromSlash(rel))
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	} else if err == nil {
		os.Remove(p)
	}
	data, err := e.Content()
	if err != nil {
		return err
	}
	if e.Mode&fs.ModeSymlink != 0 {
		if err := os.Symlink(string(data), p); err != nil {
			return err
		}
	} else {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, e.Mode.Perm())
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
		if err := os.Chmod(p, e.Mode.Perm()); err != nil {
			return err
		}
	}
	if m.chown {
		return os.Lchown(p, m.uid, m.gid)
	}
	return nil
}

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
