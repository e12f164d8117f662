package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
)

// A durable session lives in a directory of its own under the sessions
// directory (airlock's state directory, then "sessions"), 0700:
//
//	meta.json     who the session is for (written once, at its start)
//	journal       what it holds (package journal; records: package record)
//	summary.json  counts for airlock sessions list, rewritten about once a
//	              second while they change, and at exit
//	lock          flock(2)ed by the server that has it open
//	runs/run-N    the newest runs' output, for run_output (package session's runoutput.go)
//
// Nothing in it is reachable by a worker: the workspace is in memory, and
// a run's sandbox does not mount the state directory.

// Dir is one session's directory, locked by this process while open: the
// local store's Lease.
type Dir struct {
	ID   string
	Path string
	Meta store.Meta
	lock *os.File
	// dir is the directory itself, held open: what is at Path is
	// compared with it (Here), and its inode cannot be reused by another
	// directory while it is held.
	dir *os.File
}

// Store is the sessions kept in directories under Root.
type Store struct{ Root string }

var _ store.Store = Store{}

// Create makes a new session's directory and locks it.
func (st Store) Create(meta store.Meta) (store.Lease, error) { return st.CreateDir(meta) }

// Open opens and locks the session id.
func (st Store) Open(id string) (store.Lease, error) { return st.OpenDir(id) }

// CreateDir makes a new session's directory under root and locks it.
func (st Store) CreateDir(meta store.Meta) (*Dir, error) {
	root := st.Root
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	meta.Created = time.Now().UTC()
	meta.ID = store.NewID(meta.Created)
	dir := filepath.Join(root, meta.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	d := &Dir{ID: meta.ID, Path: dir, Meta: meta}
	var err error
	if d.dir, err = openOwnDir(dir); err != nil {
		return nil, err
	}
	if err := d.takeLock(); err != nil {
		d.dir.Close()
		return nil, err
	}
	if err := writeJSONAtomic(filepath.Join(dir, "meta.json"), meta); err != nil {
		d.Unlock()
		return nil, err
	}
	return d, nil
}

// OpenDir opens and locks the session id under root.
func (st Store) OpenDir(id string) (*Dir, error) {
	root := st.Root
	if err := checkID(id); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, id)
	df, err := openOwnDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (see airlock sessions list)", store.ErrNoSession, id)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	meta, err := readMeta(dir)
	if err != nil {
		df.Close()
		return nil, err
	}
	d := &Dir{ID: id, Path: dir, Meta: meta, dir: df}
	if err := d.takeLock(); err != nil {
		df.Close()
		return nil, err
	}
	return d, nil
}

// openOwnDir opens the directory at path, which must be one: not a
// symbolic link (a session's directory replaced by a link out of the
// state directory would have the session written there), nor swapped
// for one between the look and the open.
func openOwnDir(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		to, _ := os.Readlink(path)
		return nil, fmt.Errorf("%w: %s is a symbolic link (to %q); airlock keeps a session only in a directory of its own beneath %s, and follows no link out of it: move the directory the link names to %s in its place, or remove the link",
			store.ErrNotOwnDir, path, to, filepath.Dir(path), path)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (%v): remove it", store.ErrNotOwnDir, path, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openDir|noFollow, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(st, fi) {
		f.Close()
		return nil, fmt.Errorf("%w: %s changed while it was opened: open the session again", store.ErrNotOwnDir, path)
	}
	return f, nil
}

// Here reports whether the directory at the session's path is still the
// one this server opened: nil, or an error (store.ErrStateMoved) that says what
// is there now. It costs an lstat(2) and an fstat(2).
func (d *Dir) Here() error {
	at, err := os.Lstat(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s is gone", store.ErrStateMoved, d.Path)
	}
	if err != nil {
		return err
	}
	mine, err := d.dir.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(at, mine) {
		return fmt.Errorf("%w: another file is at %s", store.ErrStateMoved, d.Path)
	}
	return nil
}

// Remake makes the session's directory again at its path after it was
// removed or replaced under its server: made anew where nothing is, its
// meta.json written again and its lock taken again where the lock file is
// not the one held. A symbolic link or another file there is refused
// (store.ErrNotOwnDir). The caller writes the journal again.
func (d *Dir) Remake() error {
	if _, err := os.Lstat(d.Path); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(d.Path), 0o700); err != nil {
			return err
		}
		if err := os.Mkdir(d.Path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	df, err := openOwnDir(d.Path)
	if err != nil {
		return err
	}
	old, oldDir := d.lock, d.dir
	if held, err := old.Stat(); err == nil {
		if at, err := os.Lstat(filepath.Join(d.Path, "lock")); err == nil && os.SameFile(at, held) {
			old = nil // the lock this server holds is still there
		}
	}
	d.dir = df
	if old != nil {
		// Another server finds the session by its lock file: the
		// new one is locked before the old goes.
		if err := d.takeLock(); err != nil {
			d.dir, d.lock = oldDir, old
			df.Close()
			return err
		}
		old.Close()
	}
	oldDir.Close()
	return writeJSONAtomic(filepath.Join(d.Path, "meta.json"), d.Meta)
}

func checkID(id string) error {
	if id == "" || strings.ContainsAny(id, "/\\") || id == "." || id == ".." || strings.HasPrefix(id, ".") {
		return fmt.Errorf("%w: %q is not a session id (see airlock sessions list)", store.ErrNoSession, id)
	}
	return nil
}

func readMeta(dir string) (store.Meta, error) {
	var m store.Meta
	data, err := readNoFollow(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("%w: %s (see airlock sessions list)", store.ErrNoSession, filepath.Base(dir))
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("session %s: meta.json: %w", filepath.Base(dir), err)
	}
	return m, nil
}

// busyGrace is how long a session's lock may stay held by a server that
// is gone. A server killed while it was starting a process (git) leaves
// the lock with that child until the child execs, close-on-exec or not:
// a moment, but a restart can come quicker, and would pass its own
// session over as another server's.
const busyGrace = time.Second

// busyHook is called each time takeLock finds the lock held.
var busyHook atomic.Pointer[func()]

// SetBusyHook has f called each time opening a session finds its lock
// held, until it is called again (nil: nothing). It is for tests that
// let a lock go at that moment, as a killed server's child does when it
// execs.
func SetBusyHook(f func()) {
	if f == nil {
		busyHook.Store(nil)
		return
	}
	busyHook.Store(&f)
}

func (d *Dir) takeLock() error {
	f, err := os.OpenFile(filepath.Join(d.Path, "lock"), os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(busyGrace); tryLock(f) != nil; time.Sleep(10 * time.Millisecond) {
		if h := busyHook.Load(); h != nil {
			(*h)()
		}
		if time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("session %s: %w", d.ID, store.ErrSessionBusy)
		}
	}
	d.lock = f
	return nil
}

// Unlock releases the session for other processes.
func (d *Dir) Unlock() {
	if d.lock != nil {
		d.lock.Close() // closing drops the flock
		d.lock = nil
	}
	if d.dir != nil {
		d.dir.Close()
		d.dir = nil
	}
}

// readNoFollow reads the file at path, which must not be a symbolic link.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (d *Dir) journalPath() string { return filepath.Join(d.Path, "journal") }

func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// SessionID is the session's id.
func (d *Dir) SessionID() string { return d.ID }

// Where is the session's directory.
func (d *Dir) Where() string { return d.Path }

// Info is what the session is for.
func (d *Dir) Info() store.Meta { return d.Meta }

// SetInfo rewrites meta.json.
func (d *Dir) SetInfo(m store.Meta) error {
	m.ID = d.ID
	if err := writeJSONAtomic(filepath.Join(d.Path, "meta.json"), m); err != nil {
		return err
	}
	d.Meta = m
	return nil
}

// OpenJournal opens the session's journal file (made when missing).
func (d *Dir) OpenJournal(commit func(typ byte) bool, fn func(typ byte, payload []byte) error) (store.Journal, error) {
	j, err := journal.Open(d.journalPath(), commit, fn)
	if err != nil {
		return nil, err // a nil *journal.Journal is no store.Journal
	}
	return j, nil
}

// WriteSummary rewrites summary.json.
func (d *Dir) WriteSummary(s store.Summary) error {
	return writeJSONAtomic(filepath.Join(d.Path, "summary.json"), s)
}

// Remove deletes the session's directory; its lock is held meanwhile, so
// no other server takes it up.
func (d *Dir) Remove() error { return os.RemoveAll(d.Path) }

// CreateFile makes a new file at path, refusing one there already and a
// symbolic link in its place: for writing a session's files out.
func CreateFile(path string, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, perm)
}

// Claim checks that a server of worker key with binding b may resume the
// session (store.CheckOwner), and binds a session saved before bindings
// to it.
func (d *Dir) Claim(key string, b store.Binding) error { return store.Claim(d, key, b) }
