package memfs

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// SeedFile is one entry of a base: a regular file or a symlink.
type SeedFile struct {
	Path string
	// Mode is 0o644 or 0o755 style permission bits for a file, or
	// fs.ModeSymlink for a symlink.
	Mode fs.FileMode
	// Data is the file's content or the symlink's target. Seed copies it.
	Data []byte
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
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.begin()
	t.u = usage{}
	t.root = t.newNode(kindDir, 0o755, nil)
	var refused []Refused
	var links []SeedFile
	for _, sf := range files {
		if err := t.seedOne(sf); err != nil {
			refused = append(refused, Refused{Path: sf.Path, Err: err})
			continue
		}
		if sf.Mode&fs.ModeSymlink != 0 {
			links = append(links, sf)
		}
	}
	// Links are checked once the whole tree is there, so that one link
	// through another is judged by where it really leads.
	for _, l := range links {
		comps := strings.Split(l.Path, "/")
		if err := w.checkLink(workerView, t.root, l.Path, comps, string(l.Data)); err != nil {
			refused = append(refused, Refused{Path: l.Path, Err: withOp(err, "seed")})
			n := lookup(t.root, comps)
			if _, err := t.put(comps, nil, false); err == nil {
				t.dropped(n)
			}
		}
	}
	lim := w.limits
	if u := t.u.held; u.Bytes > lim.MaxTotalBytes || u.Files > lim.MaxFiles || u.Dirs > lim.MaxDirs {
		return nil, &Error{Op: "seed", Path: ".", Err: ErrQuotaExceeded, Detail: fmt.Sprintf(
			"the files hold %s in %d files and %d directories; the workspace allows %s, %d files and %d directories",
			formatBytes(u.Bytes), u.Files, u.Dirs, formatBytes(lim.MaxTotalBytes), lim.MaxFiles, lim.MaxDirs)}
	}
	w.cur = state{root: t.root, dirty: emptyDirty, usage: t.u}
	w.base = w.cur
	w.setCheckpoints(nil)
	w.freeze()
	return refused, nil
}

func (t *txn) seedOne(sf SeedFile) error {
	w := t.w
	comps, err := CheckPath(sf.Path)
	if err != nil {
		return withOp(err, "seed")
	}
	if err := w.deny.check(sf.Path, comps); err != nil {
		return withOp(err, "seed")
	}
	k, perm := kindFile, sf.Mode.Perm()
	switch {
	case sf.Mode&fs.ModeSymlink != 0:
		k, perm = kindSymlink, 0o777 // judged by checkLink once the tree is built
	case !sf.Mode.IsRegular():
		return pathErr("seed", sf.Path, fmt.Errorf("mode %v is neither a regular file nor a symlink", sf.Mode))
	case perm == 0:
		perm = 0o644
	}
	if err := w.fileTooBig("seed", sf.Path, int64(len(sf.Data))); err != nil {
		return err
	}
	if lookup(t.root, comps) != nil {
		return pathErr("seed", sf.Path, fs.ErrExist)
	}
	n := t.newNode(k, perm, bytes.Clone(sf.Data))
	if _, err := t.put(comps, n, true); err != nil {
		if err == syscall.ENOTDIR {
			err = fmt.Errorf("a parent of it is a file: %w", err)
		}
		return pathErr("seed", sf.Path, err)
	}
	t.added(n)
	return nil
}

// ChangeKind says how a path differs from the base.
type ChangeKind uint8

const (
	Created ChangeKind = iota + 1
	Modified
	Deleted
)

func (k ChangeKind) String() string {
	switch k {
	case Created:
		return "created"
	case Modified:
		return "modified"
	case Deleted:
		return "deleted"
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// Change is a file or symlink that differs from the base.
type Change struct {
	Path string
	Kind ChangeKind
	Mode fs.FileMode // the new mode; for a deletion, the old one
	Size int64       // the new size; for a deletion, the old one
}

// Changes lists the files and symlinks that were created, modified or
// deleted since the base, sorted by path. Its cost is proportional to the
// number of paths touched since the base, not to the size of the workspace.
// A path changed and changed back is not listed. Directories are not listed:
// git does not track them.
func (w *Workspace) Changes() []Change {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []Change
	for it := w.cur.dirty.Iterator(); !it.Done(); {
		p, _, _ := it.Next()
		if c, ok := diffPath(w.base.root, w.cur.root, p); ok {
			out = append(out, c)
		}
	}
	return out
}

// diffPath compares the file or symlink at p in two trees.
func diffPath(from, to *node, p string) (Change, bool) {
	comps := strings.Split(p, "/")
	a, b := lookup(from, comps), lookup(to, comps)
	if a != nil && a.kind == kindDir {
		a = nil
	}
	if b != nil && b.kind == kindDir {
		b = nil
	}
	switch {
	case a == nil && b == nil:
		return Change{}, false
	case a == nil:
		return Change{Path: p, Kind: Created, Mode: b.mode(), Size: int64(len(b.data))}, true
	case b == nil:
		return Change{Path: p, Kind: Deleted, Mode: a.mode(), Size: int64(len(a.data))}, true
	case sameContent(a, b):
		return Change{}, false
	}
	return Change{Path: p, Kind: Modified, Mode: b.mode(), Size: int64(len(b.data))}, true
}

// sameContent reports whether git would see a and b as the same entry: same
// type, same executable bit, same bytes.
func sameContent(a, b *node) bool {
	if a == b {
		return true
	}
	if a.kind != b.kind || a.kind == kindFile && (a.perm&0o100 != 0) != (b.perm&0o100 != 0) {
		return false
	}
	return bytes.Equal(a.data, b.data)
}
