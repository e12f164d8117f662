package memfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs/internal/resolve"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// find resolves name in view v. The worker view accepts "." for the root only
// where allowRoot is set; the billy view always has a root ("/").
func (w *Workspace) find(v resolve.View, op, name string, followLast, allowRoot bool) (resolve.Found, error) {
	if v == resolve.Worker {
		return w.resolve(op, name, followLast, allowRoot)
	}
	return w.resolveBilly(op, name, followLast)
}

func notExist(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} }

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// ReadFile returns the content of the named file, following symlinks.
func (w *Workspace) ReadFile(name string) ([]byte, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	f, err := w.resolve("read", name, true, false)
	if err != nil {
		return nil, err
	}
	switch {
	case f.Node == nil:
		return nil, notExist("read", name)
	case f.Node.Kind == tree.KindDir:
		return nil, pathErr("read", name, syscall.EISDIR)
	}
	data, err := f.Node.Content("read", name)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(data), nil
}

// WriteFile replaces the named file's content, creating the file (with perm,
// 0644 when zero) and its parent directories as needed. An existing file
// keeps its mode. A symlink is followed.
func (w *Workspace) WriteFile(name string, data []byte, perm fs.FileMode) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := w.resolve("write", name, true, false)
	if err != nil {
		return err
	}
	return w.storeLocked("write", name, f, bytes.Clone(data), perm)
}

// WriteFileOwned is WriteFile for data the caller hands over: it is kept
// without a copy, and the caller must never modify it again (what a run
// wrote, read for the workspace alone).
func (w *Workspace) WriteFileOwned(name string, data []byte, perm fs.FileMode) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := w.resolve("write", name, true, false)
	if err != nil {
		return err
	}
	return w.storeLocked("write", name, f, data, perm)
}

// storeLocked writes data (which the caller hands over) at f.
func (w *Workspace) storeLocked(op, name string, f resolve.Found, data []byte, perm fs.FileMode) error {
	if len(f.Comps) == 0 || f.Node != nil && f.Node.Kind == tree.KindDir {
		return pathErr(op, name, syscall.EISDIR)
	}
	if err := w.fileTooBig(op, name, int64(len(data))); err != nil {
		return err
	}
	t := w.begin()
	var n *tree.Node
	if f.Node != nil {
		n = t.ReplaceData(f.Node, data)
		t.Dropped(f.Node)
	} else {
		if perm == 0 {
			perm = 0o644
		}
		n = t.NewNode(tree.KindFile, perm, data)
	}
	t.Added(n)
	if _, err := t.Put(f.Comps, n, true); err != nil {
		return pathErr(op, name, err)
	}
	t.Dirty = append(t.Dirty, f.Path())
	return t.commit(op, name)
}

// Edit replaces the named file's content with fn's result, atomically: no
// other change to the workspace happens between the read and the write. fn
// runs with the workspace locked and must not call the workspace. When fn
// returns an error, nothing changes and Edit returns that error.
func (w *Workspace) Edit(name string, fn func(old []byte) ([]byte, error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := w.resolve("edit", name, true, false)
	if err != nil {
		return err
	}
	switch {
	case f.Node == nil:
		return notExist("edit", name)
	case f.Node.Kind == tree.KindDir:
		return pathErr("edit", name, syscall.EISDIR)
	}
	old, err := f.Node.Content("edit", name)
	if err != nil {
		return err
	}
	out, err := fn(bytes.Clone(old))
	if err != nil {
		return err
	}
	return w.storeLocked("edit", name, f, bytes.Clone(out), 0)
}

// Stat describes the named file, following symlinks. "." is the root.
func (w *Workspace) Stat(name string) (fs.FileInfo, error) { return w.stat(resolve.Worker, name, true) }

// Lstat describes the named file; a symlink is described, not followed.
func (w *Workspace) Lstat(name string) (fs.FileInfo, error) {
	return w.stat(resolve.Worker, name, false)
}

func (w *Workspace) stat(v resolve.View, name string, follow bool) (fs.FileInfo, error) {
	op := "lstat"
	if follow {
		op = "stat"
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	f, err := w.find(v, op, name, follow, true)
	if err != nil {
		return nil, err
	}
	if f.Node == nil {
		return nil, notExist(op, name)
	}
	return infoOf(baseName(f.Comps, name), f.Node), nil
}

func baseName(comps []string, name string) string {
	if len(comps) == 0 {
		return "."
	}
	// The name as asked for, as os.Stat reports it, even through symlinks.
	if i := strings.LastIndexByte(strings.TrimRight(name, "/"), '/'); i >= 0 {
		return strings.TrimRight(name, "/")[i+1:]
	}
	return strings.TrimRight(name, "/")
}

// ReadDir lists the named directory ("." is the root), sorted by name. Entries
// the deny list covers are left out: a worker cannot see them.
func (w *Workspace) ReadDir(name string) ([]fs.DirEntry, error) {
	infos, err := w.readDir(resolve.Worker, name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		out[i] = fi
	}
	return out, nil
}

func (w *Workspace) readDir(v resolve.View, name string) ([]*fileInfo, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	f, err := w.find(v, "readdir", name, true, true)
	if err != nil {
		return nil, err
	}
	switch {
	case f.Node == nil:
		return nil, notExist("readdir", name)
	case f.Node.Kind != tree.KindDir:
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	return w.listLocked(f), nil
}

// listLocked lists the directory at f, leaving out what the deny list covers.
func (w *Workspace) listLocked(f resolve.Found) []*fileInfo {
	out := make([]*fileInfo, 0, f.Node.Kids.Len())
	comps := append(f.Comps[:len(f.Comps):len(f.Comps)], "")
	for it := f.Node.Kids.Iterator(); !it.Done(); {
		k, c, _ := it.Next()
		comps[len(comps)-1] = k
		if w.deny.Match(comps) != "" {
			continue
		}
		out = append(out, infoOf(k, c))
	}
	return out
}

// MkdirAll creates the named directory and any missing parents.
func (w *Workspace) MkdirAll(name string, perm fs.FileMode) error {
	return w.mkdirAll(resolve.Worker, name, perm)
}

func (w *Workspace) mkdirAll(v resolve.View, name string, perm fs.FileMode) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mkdirAllLocked(v, name, perm)
}

func (w *Workspace) mkdirAllLocked(v resolve.View, name string, perm fs.FileMode) error {
	f, err := w.find(v, "mkdir", name, true, true)
	if err != nil {
		return err
	}
	if f.Node != nil {
		if f.Node.Kind == tree.KindDir {
			return nil
		}
		return pathErr("mkdir", name, syscall.ENOTDIR)
	}
	if perm == 0 {
		perm = 0o755
	}
	t := w.begin()
	for i := len(f.Comps) - f.Missing + 1; i <= len(f.Comps); i++ {
		d := t.NewNode(tree.KindDir, perm, nil)
		t.Added(d)
		if _, err := t.Put(f.Comps[:i], d, false); err != nil {
			return pathErr("mkdir", name, err)
		}
	}
	return t.commit("mkdir", name)
}

// Remove removes the named file, symlink or empty directory. A symlink is
// removed itself, not its target.
func (w *Workspace) Remove(name string) error { return w.remove(resolve.Worker, name, false) }

// RemoveAll removes the named path and everything below it. A path that
// does not exist is not an error, as with os.RemoveAll.
func (w *Workspace) RemoveAll(name string) error { return w.remove(resolve.Worker, name, true) }

func (w *Workspace) remove(v resolve.View, name string, all bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := w.find(v, "remove", name, false, false)
	if err != nil {
		return err
	}
	switch {
	case len(f.Comps) == 0:
		return pathErr("remove", name, syscall.EBUSY)
	case f.Node == nil && all:
		return nil
	case f.Node == nil:
		return notExist("remove", name)
	case f.Node.Kind == tree.KindDir && !all && f.Node.Kids.Len() > 0:
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	if err := w.checkSubtree("remove", name, f.Node, f.Comps, nil); err != nil {
		return err
	}
	t := w.begin()
	if _, err := t.Put(f.Comps, nil, false); err != nil {
		return pathErr("remove", name, err)
	}
	t.Dropped(f.Node)
	t.MarkFiles(f.Path(), f.Node)
	return t.commit("remove", name)
}

// checkSubtree applies the deny list and the path limit to everything below
// n, at its old place oldComps and, when newComps is set, at its new one: a
// worker may not move, remove or expose anything it could not name itself.
func (w *Workspace) checkSubtree(op, name string, n *tree.Node, oldComps, newComps []string) error {
	if n.Kind != tree.KindDir {
		return nil
	}
	var err error
	var visit func(n *tree.Node, rel []string)
	visit = func(n *tree.Node, rel []string) {
		for it := n.Kids.Iterator(); !it.Done() && err == nil; {
			k, c, _ := it.Next()
			r := append(rel[:len(rel):len(rel)], k)
			for _, base := range [][]string{oldComps, newComps} {
				if base == nil {
					continue
				}
				full := append(base[:len(base):len(base)], r...)
				if pat := w.deny.Match(full); pat != "" {
					err = &Error{Op: op, Path: name, Rule: pathguard.RuleDenied, Err: ErrDenied,
						Detail: fmt.Sprintf("it holds %q, which %s", strings.Join(full, "/"), pathguard.DenyReason(pat))}
					return
				}
				if p := strings.Join(full, "/"); len(p) > pathguard.MaxPathBytes {
					err = pathguard.Refuse(name, pathguard.RulePathTooLong, ErrInvalidPath,
						"it would place %s at a path of %d bytes, more than the %d allowed", pathguard.Truncate(p), len(p), pathguard.MaxPathBytes)
					err.(*Error).Op = op
					return
				}
			}
			if c.Kind == tree.KindDir {
				visit(c, r)
			}
		}
	}
	visit(n, nil)
	return err
}

// Rename moves oldname to newname, creating newname's parent directories.
// As with rename(2): a file replaces a file, a directory replaces an empty
// directory, and nothing else is touched — in particular not names that
// merely share a prefix. Moving something so that it, or anything inside
// it, would match the deny list is refused.
func (w *Workspace) Rename(oldname, newname string) error {
	return w.rename(resolve.Worker, oldname, newname)
}

func (w *Workspace) rename(v resolve.View, oldname, newname string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fo, err := w.find(v, "rename", oldname, false, false)
	if err != nil {
		return err
	}
	fn, err := w.find(v, "rename", newname, false, false)
	if err != nil {
		return err
	}
	switch {
	case len(fo.Comps) == 0 || len(fn.Comps) == 0:
		return pathErr("rename", oldname, syscall.EBUSY)
	case fo.Node == nil:
		return notExist("rename", oldname)
	case fo.Path() == fn.Path():
		return nil
	case fo.Node.Kind == tree.KindDir && strings.HasPrefix(fn.Path()+"/", fo.Path()+"/"):
		return pathErr("rename", newname, syscall.EINVAL)
	}
	if old := fn.Node; old != nil {
		switch {
		case old.Kind == tree.KindDir && fo.Node.Kind != tree.KindDir:
			return pathErr("rename", newname, syscall.EISDIR)
		case old.Kind == tree.KindDir && old.Kids.Len() > 0:
			return pathErr("rename", newname, syscall.ENOTEMPTY)
		case old.Kind != tree.KindDir && fo.Node.Kind == tree.KindDir:
			return pathErr("rename", newname, syscall.ENOTDIR)
		}
	}
	if err := w.checkSubtree("rename", oldname, fo.Node, fo.Comps, fn.Comps); err != nil {
		return err
	}
	t := w.begin()
	if _, err := t.Put(fo.Comps, nil, false); err != nil {
		return pathErr("rename", oldname, err)
	}
	replaced, err := t.Put(fn.Comps, fo.Node, true)
	if err != nil {
		return pathErr("rename", newname, err)
	}
	if err := w.checkMovedLinks(v, t.Root, newname, fn.Comps, fo.Node); err != nil {
		return withOp(err, "rename")
	}
	if replaced != nil {
		t.Dropped(replaced)
		t.MarkFiles(fn.Path(), replaced)
	}
	t.MarkFiles(fo.Path(), fo.Node)
	t.MarkFiles(fn.Path(), fo.Node)
	return t.commit("rename", newname)
}

// Symlink creates link pointing at target. The target must be relative,
// resolve inside the workspace (through any symlinks already there) and not
// reach ".git" or a denied path; anything else is refused here, and checked
// again every time the link is followed.
func (w *Workspace) Symlink(target, link string) error {
	return w.symlink(resolve.Worker, target, link)
}

func (w *Workspace) symlink(v resolve.View, target, link string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fl, err := w.find(v, "symlink", link, false, false)
	if err != nil {
		return err
	}
	if len(fl.Comps) == 0 || fl.Node != nil {
		return pathErr("symlink", link, fs.ErrExist)
	}
	t := w.begin()
	n := t.NewNode(tree.KindSymlink, 0o777, []byte(target))
	t.Added(n)
	if _, err := t.Put(fl.Comps, n, true); err != nil {
		return pathErr("symlink", link, err)
	}
	if err := w.checkLink(v, t.Root, link, fl.Comps, target); err != nil {
		return withOp(err, "symlink")
	}
	t.Dirty = append(t.Dirty, fl.Path())
	return t.commit("symlink", link)
}

// checkLink judges the symlink at comps in the tree under root, as if it
// were being made there: its name, its target text, where the target leads
// lexically, and where it really leads through the links already there
// (escapes, loops and denied paths; a dangling link is fine). Symlink,
// Rename (a moved link keeps its text, so it leads somewhere new) and Seed
// all judge links here. Following a link checks again, every time: that is
// the guarantee; this check keeps bad links from being made at all.
func (w *Workspace) checkLink(v resolve.View, root *tree.Node, name string, comps []string, target string) error {
	if pathguard.IsGitSpecial(comps[len(comps)-1]) {
		return pathguard.Refuse(name, pathguard.RuleGitSpecialLink, ErrDenied,
			"%s cannot be a symlink: git refuses such trees; write it as a regular file", comps[len(comps)-1])
	}
	if err := resolve.CheckTargetIn(v, name, target); err != nil {
		return err
	}
	if v == resolve.Worker {
		joined := path.Join(strings.Join(comps[:len(comps)-1], "/"), target)
		if joined == ".." || strings.HasPrefix(joined, "../") {
			return pathguard.Refuse(name, pathguard.RuleSymlinkEscape, ErrOutsideSandbox,
				"symlink target %q leads above the workspace root from here; a symlink must point inside the workspace", target)
		}
		if joined != "." {
			if err := w.deny.CheckComps(name, strings.Split(joined, "/")); err != nil {
				err.Detail = "symlink target: " + err.Detail
				return err
			}
		}
	}
	if _, err := resolve.Walk(w.deny, v, root, name, comps, true); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// checkMovedLinks applies checkLink to every symlink at or below n, which
// now sits at comps in the tree under root.
func (w *Workspace) checkMovedLinks(v resolve.View, root *tree.Node, name string, comps []string, n *tree.Node) error {
	switch n.Kind {
	case tree.KindSymlink:
		if err := w.checkLink(v, root, name, comps, string(n.Data)); err != nil {
			if e, ok := err.(*Error); ok && len(comps) > 0 {
				e.Detail = fmt.Sprintf("the symlink would be at %s: %s", strings.Join(comps, "/"), e.Detail)
			}
			return err
		}
	case tree.KindDir:
		for it := n.Kids.Iterator(); !it.Done(); {
			k, c, _ := it.Next()
			if err := w.checkMovedLinks(v, root, name, append(comps[:len(comps):len(comps)], k), c); err != nil {
				return err
			}
		}
	}
	return nil
}

// Readlink returns the target of the named symlink.
func (w *Workspace) Readlink(name string) (string, error) { return w.readlink(resolve.Worker, name) }

func (w *Workspace) readlink(v resolve.View, name string) (string, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	f, err := w.find(v, "readlink", name, false, false)
	if err != nil {
		return "", err
	}
	switch {
	case f.Node == nil:
		return "", notExist("readlink", name)
	case f.Node.Kind != tree.KindSymlink:
		return "", pathErr("readlink", name, syscall.EINVAL)
	}
	return string(f.Node.Data), nil
}

// Chmod sets the permission bits of the named file, following symlinks. Of
// the bits, git keeps only whether a file is executable.
func (w *Workspace) Chmod(name string, mode fs.FileMode) error {
	return w.chmod(resolve.Worker, name, mode)
}

func (w *Workspace) chmod(v resolve.View, name string, mode fs.FileMode) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := w.find(v, "chmod", name, true, false)
	if err != nil {
		return err
	}
	if f.Node == nil {
		return notExist("chmod", name)
	}
	if len(f.Comps) == 0 {
		return pathErr("chmod", name, syscall.EPERM)
	}
	t := w.begin()
	var n *tree.Node
	if f.Node.Kind == tree.KindDir {
		n = t.CopyDir(f.Node, false)
	} else {
		n = t.Version(f.Node)
		t.Dropped(f.Node)
		t.Added(n)
		t.Dirty = append(t.Dirty, f.Path())
	}
	n.Perm = mode.Perm()
	if _, err := t.Put(f.Comps, n, false); err != nil {
		return pathErr("chmod", name, err)
	}
	return t.commit("chmod", name)
}
