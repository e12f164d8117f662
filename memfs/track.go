package memfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// SeedFile is one entry of a base: a regular file or a symlink.
type SeedFile struct {
	Path string
	// Mode is 0o644 or 0o755 style permission bits for a file, or
	// fs.ModeSymlink for a symlink.
	Mode fs.FileMode
	// Data is the file's content or the symlink's target. Seed copies it,
	// unless NoCopy is set.
	Data []byte
	// NoCopy lets the workspace keep Data itself instead of a copy; the
	// caller promises that Data never changes (git objects never do). The
	// workspace never changes it either: it copies before writing.
	NoCopy bool
	// ID is Data's git blob id, when the caller knows it (a file from a
	// tree): kept with the version, so nobody hashes it again. It must be
	// the id of Data.
	ID [20]byte
	// From, when set, makes the file lazy: its content is blob ID, of
	// Size bytes, read through From when first needed; Data is ignored.
	// Only regular files are lazy (a link's target is judged at once).
	From Loader
	Size int64
}

// Refused is an entry Seed did not take in, and why.
type Refused struct {
	Path string
	Err  error
}

// Seed replaces everything in the workspace with files and makes that state
// the base that changes are tracked against. Checkpoints are dropped.
//
// Entries the path guard, the deny list or the symlink policy refuse, files
// over the per-file limit, and entries that clash with an earlier one (a
// file where a directory is needed, a duplicate) are left out and returned,
// with the reason. If what remains exceeds the workspace's quotas, Seed
// changes nothing and returns ErrQuotaExceeded.
func (w *Workspace) Seed(files []SeedFile) ([]Refused, error) {
	s, refused, err := w.NewSnapshot(files)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	u := s.Usage()
	w.cur = state{root: s.root, dirty: emptyDirty, usage: tree.Tally{Live: u, Held: u}}
	w.base = w.cur
	w.retained = nil
	w.setCheckpoints(nil)
	return refused, nil
}

// seedNode checks one seed entry and makes its node, not yet linked.
func (t *txn) seedNode(sf SeedFile) ([]string, *tree.Node, error) {
	w := t.w
	comps, err := pathguard.CheckPath(sf.Path)
	if err != nil {
		return nil, nil, withOp(err, "seed")
	}
	if err := w.deny.CheckComps(sf.Path, comps); err != nil {
		return nil, nil, withOp(err, "seed")
	}
	k, perm := tree.KindFile, sf.Mode.Perm()
	switch {
	case sf.Mode&fs.ModeSymlink != 0:
		k, perm = tree.KindSymlink, 0o777 // judged by checkLink once the tree is built
	case !sf.Mode.IsRegular():
		return nil, nil, pathErr("seed", sf.Path, fmt.Errorf("mode %v is neither a regular file nor a symlink", sf.Mode))
	case perm == 0:
		perm = 0o644
	}
	size := int64(len(sf.Data))
	if sf.From != nil {
		if k != tree.KindFile || sf.ID == [20]byte{} || sf.Size < 0 {
			return nil, nil, pathErr("seed", sf.Path, errors.New("only a regular file with a blob id and a size can be lazy"))
		}
		size = sf.Size
	}
	if err := w.fileTooBig("seed", sf.Path, size); err != nil {
		return nil, nil, err
	}
	data := sf.Data
	switch {
	case sf.From != nil:
		data = nil
	case !sf.NoCopy:
		data = bytes.Clone(data)
	}
	n := t.NewNode(k, perm, data)
	n.OID = sf.ID
	if sf.From != nil {
		n.Lazy = &tree.Lazy{From: sf.From, Size: size}
	}
	return comps, n, nil
}

// Changes lists the files and symlinks that were created, modified or
// deleted since the base, sorted by path. Its cost is proportional to the
// number of paths touched since the base, not to the size of the workspace.
// A path changed and changed back is not listed. Directories are not listed:
// git does not track them.
func (w *Workspace) Changes() []Change {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.changesLocked()
}

func (w *Workspace) changesLocked() []Change {
	var out []Change
	for it := w.cur.dirty.Iterator(); !it.Done(); {
		p, _, _ := it.Next()
		if c, ok := tree.DiffPath(w.base.root, w.cur.root, p); ok {
			out = append(out, c)
		}
	}
	return out
}
