package gitread

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/go-git/go-git/v5/plumbing"
)

// worktreeFiles reads a lazy base's blobs from the files of a working
// tree, where a repository has most of them checked out already: a file
// is taken only when it hashes to the blob's id, which is what git itself
// would give, so an edit in the working tree, a smudge filter, an
// end-of-line conversion or another branch checked out only sends the
// read on to git (catFile). Reading a checked-out file costs its bytes
// and a hash; inflating it from a pack costs much more, and a first run
// or search reads every file of the base.
//
// The working tree is the user's, changing, and hostile like any
// repository: a file is opened beneath its top without following any
// symlink or crossing a mount (openat2), a FIFO or a device is not read,
// and a file whose size is not the blob's is not read at all.
type worktreeFiles struct {
	dirfd int
	paths sync.Map // plumbing.Hash -> string: where the pull listed the blob
	index gitIndex // git's own word on which files are unchanged

	hashed atomic.Int64 // files read whose bytes were hashed (for tests)
}

// fileStat is what a read of the working tree needs of a file's stat.
type fileStat struct {
	size         int64
	mtime, ctime int64 // nanoseconds
	ino          uint64
	exec         bool
}

// newWorktreeFiles reads beneath top, whose index git keeps in gitDir, or
// returns nil where that cannot be done safely (no openat2).
func newWorktreeFiles(top, gitDir string) *worktreeFiles {
	fd, err := openDir(top)
	if err != nil {
		return nil
	}
	w := &worktreeFiles{dirfd: fd}
	if gitDir != "" {
		w.index.path = filepath.Join(gitDir, "index")
	}
	return w
}

// note records that the pull listed blob h at path p (a regular file's),
// for the reads to look there.
func (w *worktreeFiles) note(h plumbing.Hash, p string) {
	if w == nil {
		return
	}
	if _, err := pathguard.CheckPath(p); err != nil {
		return // nothing the workspace holds, and nowhere to look
	}
	w.paths.LoadOrStore(h, p)
}

// read returns blob h, of size bytes, from the working tree, if the file
// where the pull listed it holds exactly it.
func (w *worktreeFiles) read(h plumbing.Hash, size int64) ([]byte, bool) {
	if w == nil {
		return nil, false
	}
	p, ok := w.paths.Load(h)
	if !ok {
		return nil, false
	}
	f, st, err := openBeneath(w.dirfd, p.(string))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if st.size != size {
		return nil, false
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, false
	}
	// Where git's index says the file holds the blob and its stat agrees,
	// git takes it as unchanged without reading it; so does this read,
	// without hashing what it read. Otherwise the bytes must hash to the
	// blob.
	if !w.index.unchanged(p.(string), h, st) {
		w.hashed.Add(1)
		if plumbing.ComputeHash(plumbing.BlobObject, data) != h {
			return nil, false
		}
	}
	return data, true
}

// gitIndex is git's index of a working tree (.git/index), read again when
// it changes: for each path, the blob git last indexed or checked out
// there and the file's stat then. git trusts a file whose stat still
// matches its entry to hold that blob (git status does not read it); a
// read of the working tree trusts it the same way, except for an entry
// git itself would not trust: one changed in the same instant as the
// index was written ("racily clean"), or a stat that differs in any of
// size, modification time, change time (which no one sets by hand),
// inode or executable bit. An index go-git cannot read (a split index,
// say) is not trusted at all: every file read is hashed.
type gitIndex struct {
	path string

	mu      sync.Mutex
	checked time.Time // when the index file was last looked at
	stamp   fileStamp // the index file as it was when entries were read
	entries map[string]indexed
}

type fileStamp struct {
	size  int64
	mtime time.Time
}

type indexed struct { // an entry of the index, as much as a read needs
	id           plumbing.Hash
	size         uint32
	mtime, ctime int64
	ino          uint32
	exec         bool
}

// unchanged reports whether the index says the file at p, stat as st,
// holds blob h.
func (x *gitIndex) unchanged(p string, h plumbing.Hash, st fileStat) bool {
	if x.path == "" {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refreshLocked()
	e, ok := x.entries[p]
	return ok && e.id == h && e.size == uint32(st.size) && e.mtime == st.mtime && e.ctime == st.ctime &&
		e.ino == uint32(st.ino) && e.exec == st.exec
}

// refreshLocked reads the index again if the file changed, looking at it
// no more than ten times a second.
func (x *gitIndex) refreshLocked() {
	if time.Since(x.checked) < 100*time.Millisecond {
		return
	}
	x.checked = time.Now()
	fi, err := os.Stat(x.path)
	if err != nil {
		x.entries, x.stamp = nil, fileStamp{}
		return
	}
	stamp := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if stamp == x.stamp && x.entries != nil {
		return
	}
	x.entries, x.stamp = nil, stamp
	f, err := openIndex(x.path)
	if err != nil {
		return
	}
	defer f.Close()
	var idx index.Index
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(&idx); err != nil {
		return
	}
	entries := make(map[string]indexed, len(idx.Entries))
	for _, e := range idx.Entries {
		// Only a regular file's entry at stage 0 says what a file holds;
		// one changed no earlier than the index was written is racy.
		if e.Stage != 0 || e.SkipWorktree || e.IntentToAdd || (e.Mode != filemode.Regular && e.Mode != filemode.Executable) ||
			!e.ModifiedAt.Before(stamp.mtime) {
			continue
		}
		entries[e.Name] = indexed{id: e.Hash, size: e.Size, mtime: e.ModifiedAt.UnixNano(), ctime: e.CreatedAt.UnixNano(),
			ino: e.Inode, exec: e.Mode == filemode.Executable}
	}
	x.entries = entries
}

func (w *worktreeFiles) close() {
	if w != nil {
		closeDir(w.dirfd)
	}
}
