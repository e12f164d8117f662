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
	"syscall"
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
func (m *Mirror) Close() error {
	m.removes.Wait()
	return os.RemoveAll(m.dir)
}

// discard removes the tree at p, which is inside the mirror, out of the
// way of what comes next: it is renamed aside at once and removed in the
// background, so that a run that deleted ten thousand files does not
// wait for the second ten thousand unlinks.
func (m *Mirror) discard(p string) error {
	aside := filepath.Join(m.dir, fmt.Sprintf("trash-%d", m.trash.Add(1)))
	if err := os.Rename(p, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return os.RemoveAll(p)
	}
	m.removes.Add(1)
	go func() {
		defer m.removes.Done()
		os.RemoveAll(aside)
	}()
	return nil
}

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
	if len(m.redo) > 0 {
		// Left out last time, or not as synced says.
		for _, c := range changes {
			delete(m.redo, c.Path)
		}
		for p := range m.redo {
			changes = append(changes, memfs.Change{Path: p, Kind: memfs.Modified})
		}
	}
	// Removals first: what a file left may be where a directory goes.
	for _, c := range changes {
		e, ok := s.Lookup(c.Path)
		if !ok {
			// A parent that is a file now means the path is gone too.
			if err := os.RemoveAll(filepath.Join(lower, filepath.FromSlash(c.Path))); err != nil && !errors.Is(err, syscall.ENOTDIR) {
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
			err = m.writeTimed(filepath.Join(base, filepath.FromSlash(e.Path)), e, data)
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

// writeTimed is write, giving a regular file the time m.Time says.
func (m *Mirror) writeTimed(p string, e memfs.Entry, data []byte) error {
	if m.Time == nil || !e.Mode.IsRegular() {
		return m.write(p, e, data)
	}
	return m.writeFile(p, e, data, func(fd int) error { return futimens(fd, p, m.Time(e, data)) })
}

// write creates p, which does not exist, holding e.
func (m *Mirror) write(p string, e memfs.Entry, data []byte) error {
	return m.writeFile(p, e, data, nil)
}

// writeFile is write, calling also on the regular file's descriptor once
// it is written.
func (m *Mirror) writeFile(p string, e memfs.Entry, data []byte, also func(fd int) error) error {
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
	if also != nil {
		if err := also(fd); err != nil {
			return &os.PathError{Op: "utimes", Path: p, Err: err}
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
	lower, upper, _, _ := m.Dirs()
	promoted := map[string]bool{}
	var gone []string                 // directories removed whole, with what was in them
	dirs := map[string]bool{"": true} // directories of lower known to be directories
	for i := 0; i < len(changes); i++ {
		c := changes[i]
		lp := filepath.Join(lower, filepath.FromSlash(c.Path))
		switch c.Kind {
		case Removed:
			if _, ok := after.Lookup(c.Path); ok || after.IsDir(c.Path) {
				continue
			}
			if m.discard(lp) == nil {
				promoted[c.Path] = true
				gone = append(gone, c.Path+"/")
			}
		case MadeDir, Replaced:
			if !after.IsDir(c.Path) {
				continue
			}
			fi, err := os.Lstat(lp)
			if err == nil && (c.Kind == Replaced || !fi.IsDir()) {
				m.discard(lp)
			}
			if n := m.promoteDir(lower, upper, after, changes[i:], dirs, promoted); n > 0 {
				// A directory the run made, which the workspace took
				// whole: moved in one rename.
				i += n - 1
				continue
			}
			if m.mkdir(lp) == nil {
				dirs[c.Path] = true
			}
		case Wrote, Linked:
			if c.Other != "" || !holds(after, c) || m.lowerDir(lower, path.Dir(c.Path), dirs) != nil {
				continue
			}
			up := filepath.Join(upper, filepath.FromSlash(c.Path))
			if os.Rename(up, lp) != nil {
				// A directory in the way (a rename replaces anything else).
				if os.RemoveAll(lp) != nil || os.Rename(up, lp) != nil {
					continue
				}
			}
			// The workspace keeps 0644 or 0755: lower is what it holds.
			if e, _ := after.Lookup(c.Path); c.Kind == Wrote && c.Mode.Perm() != e.Mode.Perm() && os.Chmod(lp, e.Mode.Perm()) != nil {
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
func (m *Mirror) promoteDir(lower, upper string, after *memfs.Snapshot, cs []Change, dirs, promoted map[string]bool) int {
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
	lp := filepath.Join(lower, filepath.FromSlash(d.Path))
	if _, err := os.Lstat(lp); err == nil || m.lowerDir(lower, path.Dir(d.Path), dirs) != nil {
		return 0
	}
	if os.Rename(filepath.Join(upper, filepath.FromSlash(d.Path)), lp) != nil {
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
// replacing a file in the way; dirs remembers what is known to be one.
func (m *Mirror) lowerDir(lower, dir string, dirs map[string]bool) error {
	if dir == "." {
		dir = ""
	}
	if dirs[dir] {
		return nil
	}
	if err := m.lowerDir(lower, path.Dir(dir), dirs); err != nil {
		return err
	}
	p := filepath.Join(lower, filepath.FromSlash(dir))
	if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
		os.Remove(p)
	}
	if err := m.mkdir(p); err != nil {
		return err
	}
	dirs[dir] = true
	return nil
}

// Reset empties the upper and work directories for the next run.
func (m *Mirror) Reset() error {
	_, upper, work, _ := m.Dirs()
	for _, d := range []string{upper, work} {
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
func (m *Mirror) Changes(maxFile int64) ([]Change, error) {
	_, upper, _, _ := m.Dirs()
	var out []Change
	var files []int // indexes in out of regular files, to read
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, d := range ents {
			p, r := filepath.Join(dir, d.Name()), d.Name()
			if rel != "" {
				r = rel + "/" + r
			}
			if d.Type().IsRegular() {
				out = append(out, Change{Path: r, Kind: Wrote})
				files = append(files, len(out)-1)
				continue
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			switch mode := fi.Mode(); {
			case mode&fs.ModeCharDevice != 0 && isWhiteout(fi):
				out = append(out, Change{Path: r, Kind: Removed})
			case mode.IsDir():
				kind := MadeDir
				if opaque(p) {
					kind = Replaced
				}
				out = append(out, Change{Path: r, Kind: kind, Mode: mode.Perm()})
				if err := walk(p, r); err != nil {
					return err
				}
			case mode&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				out = append(out, Change{Path: r, Kind: Linked, Mode: fs.ModeSymlink | 0o777, Data: []byte(target)})
			default:
				out = append(out, Change{Path: r, Kind: Wrote, Other: fmt.Sprintf("a %v", mode.Type())})
			}
		}
		return nil
	}
	if err := walk(upper, ""); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := readChange(&out[i], filepath.Join(upper, filepath.FromSlash(out[i].Path)), maxFile); err != nil {
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

// readChange reads a regular file of the upper layer into c (its mode
// and content, or why it is not taken), without following a link.
func readChange(c *Change, p string, maxFile int64) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
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
