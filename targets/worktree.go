package targets

import (
	"io"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
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
}

// newWorktreeFiles reads beneath top, or returns nil where that cannot be
// done safely (no openat2).
func newWorktreeFiles(top string) *worktreeFiles {
	fd, err := openDir(top)
	if err != nil {
		return nil
	}
	return &worktreeFiles{dirfd: fd}
}

// note records that the pull listed blob h at path p (a regular file's),
// for the reads to look there.
func (w *worktreeFiles) note(h plumbing.Hash, p string) {
	if w == nil {
		return
	}
	if _, err := memfs.CheckPath(p); err != nil {
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
	f, n, err := openBeneath(w.dirfd, p.(string))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if n != size {
		return nil, false
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, false
	}
	if plumbing.ComputeHash(plumbing.BlobObject, data) != h {
		return nil, false
	}
	return data, true
}

func (w *worktreeFiles) close() {
	if w != nil {
		closeDir(w.dirfd)
	}
}
