package session

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// A durable session lives in a directory of its own under the sessions
// directory (airlock's state directory, then "sessions"), 0700:
//
//	meta.json     who the session is for (written once, at its start)
//	journal       what it holds (see persist.go)
//	summary.json  counts for airlock sessions list, rewritten about once a
//	              second while they change, and at exit
//	lock          flock(2)ed by the server that has it open
//	runs/run-N    the newest runs' output, for run_output (runoutput.go)
//
// Nothing in it is reachable by a worker: the workspace is in memory, and
// a run's sandbox does not mount the state directory.

// Meta is what a session is for.
type Meta struct {
	ID         string    `json:"id"`
	Worker     string    `json:"worker"`
	WorkerKey  string    `json:"worker_key"` // which worker file (or repository, for the default worker)
	WorkerFile string    `json:"worker_file,omitempty"`
	Created    time.Time `json:"created"`
	// Transport is "http" for a session of airlock serve --http, which
	// only its own token resumes (TokenHash, the SHA-256 of it in hex);
	// "" for one over stdio, which the worker's next server resumes.
	Transport string `json:"transport,omitempty"`
	TokenHash string `json:"token_hash,omitempty"`
	// Binding is the worker file's content, its targets and the
	// operator's policy the session was made under: it resumes only
	// under the same (binding.go). Nil in a session saved before
	// sessions recorded it.
	Binding *Binding `json:"binding,omitempty"`
}

// Summary is a session's state in counts, for people.
type Summary struct {
	Updated     time.Time `json:"updated"`
	Changed     int       `json:"changed"`     // files changed and not staged
	Staged      int       `json:"staged"`      // staged commits
	Checkpoints int       `json:"checkpoints"` // checkpoints
	Pending     int       `json:"pending"`     // pushes waiting for a reviewer
	Closed      bool      `json:"closed"`      // its server ended it cleanly
	Bytes       int64     `json:"bytes"`       // the journal's size
}

// Unfinished reports whether the session holds work that has not left:
// changes, staged commits or pushes waiting.
func (s Summary) Unfinished() bool { return s.Changed > 0 || s.Staged > 0 || s.Pending > 0 }

// StateDir is one session's directory, locked by this process while open.
type StateDir struct {
	ID   string
	Path string
	Meta Meta
	lock *os.File
	// dir is the directory itself, held open: what is at Path is
	// compared with it (Here), and its inode cannot be reused by another
	// directory while it is held.
	dir *os.File
}

// ErrSessionBusy: another running server has the session open.
var ErrSessionBusy = errors.New("the session is open in another airlock serve")

// ErrNoSession: no session has that id.
var ErrNoSession = errors.New("no such session")

// ErrNotOwnDir: what is at a session's path is not a directory of its
// own (a symbolic link, say); airlock neither resumes nor writes a
// session through it.
var ErrNotOwnDir = errors.New("not a directory of its own")

// ErrStateMoved: the session's directory was removed or replaced under
// the server that has it open.
var ErrStateMoved = errors.New("the session's directory was removed or replaced")

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateStateDir makes a new session's directory under root and locks it.
func CreateStateDir(root string, meta Meta) (*StateDir, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	meta.Created = time.Now().UTC()
	meta.ID = meta.Created.Format("20060102-150405") + "-" + randomHex(4)
	dir := filepath.Join(root, meta.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	d := &StateDir{ID: meta.ID, Path: dir, Meta: meta}
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

// OpenStateDir opens and locks the session id under root.
func OpenStateDir(root, id string) (*StateDir, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, id)
	df, err := openOwnDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (see airlock sessions list)", ErrNoSession, id)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	meta, err := readMeta(dir)
	if err != nil {
		df.Close()
		return nil, err
	}
	d := &StateDir{ID: id, Path: dir, Meta: meta, dir: df}
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
			ErrNotOwnDir, path, to, filepath.Dir(path), path)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (%v): remove it", ErrNotOwnDir, path, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openDir|noFollow, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(st, fi) {
		f.Close()
		return nil, fmt.Errorf("%w: %s changed while it was opened: open the session again", ErrNotOwnDir, path)
	}
	return f, nil
}

// Here reports whether the directory at the session's path is still the
// one this server opened: nil, or an error (ErrStateMoved) that says what
// is there now. It costs an lstat(2) and an fstat(2).
func (d *StateDir) Here() error {
	at, err := os.Lstat(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s is gone", ErrStateMoved, d.Path)
	}
	if err != nil {
		return err
	}
	mine, err := d.dir.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(at, mine) {
		return fmt.Errorf("%w: another file is at %s", ErrStateMoved, d.Path)
	}
	return nil
}

// remake makes the session's directory again at its path after it was
// removed or replaced under its server: made anew where nothing is, its
// meta.json written again and its lock taken again where the lock file is
// not the one held. A symbolic link or another file there is refused
// (ErrNotOwnDir). The caller writes the journal again.
func (d *StateDir) remake() error {
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
		return fmt.Errorf("%w: %q is not a session id (see airlock sessions list)", ErrNoSession, id)
	}
	return nil
}

func readMeta(dir string) (Meta, error) {
	var m Meta
	data, err := readNoFollow(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("%w: %s (see airlock sessions list)", ErrNoSession, filepath.Base(dir))
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

func (d *StateDir) takeLock() error {
	f, err := os.OpenFile(filepath.Join(d.Path, "lock"), os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(busyGrace); tryLock(f) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("session %s: %w", d.ID, ErrSessionBusy)
		}
	}
	d.lock = f
	return nil
}

// Unlock releases the session for other processes.
func (d *StateDir) Unlock() {
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

func (d *StateDir) journalPath() string { return filepath.Join(d.Path, "journal") }

// Listed is a session as airlock sessions list shows it.
type Listed struct {
	Meta
	Summary
	Path    string
	Running bool // a server has it open now
	NoState bool // it never saved anything
}

// ListSessions lists the sessions under root, newest first.
func ListSessions(root string) ([]Listed, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, e := range ents {
		if !e.IsDir() || checkID(e.Name()) != nil {
			continue
		}
		l, err := listOne(filepath.Join(root, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

func listOne(dir string) (Listed, error) {
	m, err := readMeta(dir)
	if err != nil {
		return Listed{}, err
	}
	l := Listed{Meta: m, Path: dir}
	if data, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		_ = json.Unmarshal(data, &l.Summary) // a summary cut by a crash counts nothing; the journal is the state
	} else {
		l.NoState = true
	}
	if f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0); err == nil {
		if tryLock(f) != nil {
			l.Running = true
		}
		f.Close()
	}
	fi, err := os.Stat(filepath.Join(dir, "journal"))
	if err == nil {
		l.Bytes = fi.Size()
	}
	if err == nil && !l.Running && !l.Closed {
		l.readJournal()
	}
	return l, nil
}

// readJournal counts l's state from its journal. Its server died: the
// summary, rewritten about once a second, may be behind the journal,
// which is the truth.
func (l *Listed) readJournal() {
	fi, err := os.Stat(filepath.Join(l.Path, "journal"))
	if err != nil {
		return
	}
	if in, err := inspectJournal(l.Path); err == nil {
		l.Summary = Summary{Updated: fi.ModTime().UTC(), Changed: len(in.Changes), Staged: len(in.Staged),
			Checkpoints: len(in.Checkpoints), Pending: len(in.Pushes), Bytes: fi.Size()}
		l.NoState = false
	}
}

// LatestUnfinished finds the newest session of workerKey, made under
// binding b, that is not running and holds work that has not left, locks
// it and returns it; nil when there is none. Unfinished sessions of the
// worker made under another binding are passed over: others says why
// for each (a *BindingError, which names the server that resumes it).
func LatestUnfinished(root, workerKey string, b Binding) (d *StateDir, others []error, err error) {
	list, err := ListSessions(root)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range list {
		if l.WorkerKey != workerKey || l.Transport != "" || !l.Running && (l.NoState || !l.Unfinished()) {
			continue
		}
		if err := CheckOwner(l.Meta, workerKey, b); err != nil {
			if !l.Running {
				others = append(others, err)
			}
			continue
		}
		// One listed as running may be a killed server's, its lock held a
		// moment longer (see busyGrace), and its summary not yet written:
		// OpenStateDir tells, and then its journal.
		d, err := OpenStateDir(root, l.ID)
		if errors.Is(err, ErrSessionBusy) {
			continue // another server has it open
		}
		if err != nil {
			return nil, others, err
		}
		if l.Running {
			l.readJournal()
			if l.NoState || !l.Unfinished() {
				d.Unlock()
				continue
			}
		}
		if err := d.Claim(workerKey, b); err != nil {
			d.Unlock()
			return nil, others, err
		}
		return d, others, nil
	}
	return nil, others, nil
}

// RemoveSession deletes a session's directory; a running one is refused.
func RemoveSession(root, id string) error {
	d, err := OpenStateDir(root, id)
	if err != nil {
		return err
	}
	defer d.Unlock()
	return os.RemoveAll(d.Path)
}

// Sweep removes the sessions under root that no server has open, whose
// work all left (pushed or discarded) or that never saved anything, and
// that were last changed before now-retention. It returns their ids.
func Sweep(root string, retention time.Duration) []string {
	res, _ := Prune(root, PruneOptions{OlderThan: retention})
	var gone []string
	for _, l := range res.Removed {
		gone = append(gone, l.ID)
	}
	return gone
}

// PruneOptions say which sessions Prune removes.
type PruneOptions struct {
	// OlderThan: only sessions last changed (or, never changed, created)
	// at least this long ago.
	OlderThan time.Duration
	// Force removes sessions with work that has not left too (changes,
	// staged commits, pushes waiting). A session a running server has
	// open is never removed.
	Force bool
	// DryRun removes nothing, and says what it would remove.
	DryRun bool
}

// Pruned is what Prune did, each list newest first.
type Pruned struct {
	Removed []Listed // removed (with DryRun: would be)
	// Kept: old enough, but holding work that has not left (Force
	// removes them), or open in a running server.
	Unfinished, Running []Listed
	Recent              int // younger than OlderThan
	Failed              map[string]error
}

// Prune removes the sessions under root that o names.
func Prune(root string, o PruneOptions) (Pruned, error) {
	list, err := ListSessions(root)
	if err != nil {
		return Pruned{}, err
	}
	res := Pruned{Failed: map[string]error{}}
	for _, l := range list {
		when := l.Updated
		if when.IsZero() {
			when = l.Created
		}
		switch {
		case time.Since(when) < o.OlderThan:
			res.Recent++
			continue
		case l.Running:
			res.Running = append(res.Running, l)
			continue
		case l.Unfinished() && !o.Force:
			res.Unfinished = append(res.Unfinished, l)
			continue
		}
		if !o.DryRun {
			if err := RemoveSession(root, l.ID); err != nil {
				if errors.Is(err, ErrSessionBusy) {
					res.Running = append(res.Running, l)
				} else {
					res.Failed[l.ID] = err
				}
				continue
			}
		}
		res.Removed = append(res.Removed, l)
	}
	return res, nil
}

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

// ReadMeta reads what session id under root records, without opening it
// (an HTTP server checks a token against it before reading a request).
func ReadMeta(root, id string) (Meta, error) {
	if err := checkID(id); err != nil {
		return Meta{}, err
	}
	dir := filepath.Join(root, id)
	df, err := openOwnDir(dir) // a session directory swapped for a link is none
	if err != nil {
		return Meta{}, err
	}
	df.Close()
	return readMeta(dir)
}
