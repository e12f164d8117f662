package memfs

import (
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// maxSymlinkHops is how many symlinks one lookup may follow, as Linux's
// MAXSYMLINKS.
const maxSymlinkHops = 40

// view selects whose rules a lookup follows.
type view uint8

const (
	// workerView is the worker's: the path guard, the deny list and the
	// symlink policy (relative targets that stay inside) at every hop.
	workerView view = iota
	// billyView is go-billy's, for go-git and other trusted code: absolute
	// symlink targets start at the workspace root and ".." stops there, as
	// in go-billy's memfs. Names still pass the component rules and the deny
	// list; nothing in this view can reach the host either way.
	billyView
)

// found is where a lookup ended.
type found struct {
	comps   []string   // canonical path: no symlink among the parents
	node    *tree.Node // nil when the path does not exist
	missing int        // how many trailing components do not exist
	hops    int        // symlinks followed
}

func (f found) path() string { return strings.Join(f.comps, "/") }

// walk resolves comps from root. Symlinks among the parents are followed,
// and the last one too when followLast is set.
func (w *Workspace) walk(v view, root *tree.Node, name string, comps []string, followLast bool) (found, error) {
	var stackBuf [16]*tree.Node
	stack := append(stackBuf[:0], root)
	names := make([]string, 0, len(comps))
	// pending is comps until a symlink is met; only then is a new slice
	// made, with the target in front of what remains.
	pending := comps
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(names) == 0 {
				if v == billyView {
					continue
				}
				return found{}, pathguard.Refuse(name, pathguard.RuleSymlinkEscape, ErrOutsideSandbox,
					"a symlink on the way leads above the workspace root; only links that stay inside the workspace can be followed")
			}
			names, stack = names[:len(names)-1], stack[:len(stack)-1]
			continue
		}
		dir := stack[len(stack)-1]
		child := dir.Child(c)
		if child == nil {
			f := found{comps: names, hops: hops}
			for _, r := range append([]string{c}, pending...) {
				switch r {
				case "", ".":
				case "..":
					// POSIX resolves "missing/.." as an error, not as a no-op.
					return found{}, &fs.PathError{Op: "lookup", Path: name, Err: fs.ErrNotExist}
				default:
					f.comps = append(f.comps, r)
					f.missing++
				}
			}
			if hops > 0 {
				return f, w.checkHopDeny(name, f.comps)
			}
			return f, nil
		}
		last := len(pending) == 0
		if child.Kind == tree.KindSymlink && (!last || followLast) {
			hops++
			if hops > maxSymlinkHops {
				return found{}, &fs.PathError{Op: "lookup", Path: name, Err: syscall.ELOOP}
			}
			target := string(child.Data)
			if err := checkTargetIn(v, name, target); err != nil {
				return found{}, err
			}
			if strings.HasPrefix(target, "/") { // billy view only
				names, stack = names[:0], stack[:1]
			}
			pending = append(strings.Split(target, "/"), pending...)
			continue
		}
		if !last && child.Kind != tree.KindDir {
			return found{}, &fs.PathError{Op: "lookup", Path: name, Err: syscall.ENOTDIR}
		}
		names = append(names, c)
		stack = append(stack, child)
		if hops > 0 {
			if err := w.checkHopDeny(name, names); err != nil {
				return found{}, err
			}
		}
	}
	return found{comps: names, node: stack[len(stack)-1], hops: hops}, nil
}

// checkTargetIn applies the view's rules to a symlink's target: the worker's
// symlink policy, or in the billy view the component rules, so that no link
// can lead to ".git" or a reserved name even there.
func checkTargetIn(v view, name, target string) error {
	if v == workerView {
		return pathguard.CheckLinkTarget(name, target)
	}
	for _, c := range strings.Split(target, "/") {
		if c == "" || c == "." || c == ".." {
			continue
		}
		if err := pathguard.CheckName(name, c); err != nil {
			err.Detail = "symlink target: " + err.Detail
			return err
		}
	}
	return nil
}

// checkHopDeny applies the deny list to where symlinks led: no operation
// may reach a denied path through a link.
func (w *Workspace) checkHopDeny(name string, comps []string) error {
	if len(comps) == 0 {
		return nil
	}
	if err := w.deny.CheckComps(name, comps); err != nil {
		err.Detail = "through a symlink, " + err.Detail
		return err
	}
	return nil
}

// resolve is the one way a worker's path enters the workspace: the path
// guard, the deny list, then a lookup under the worker's symlink policy.
// allowRoot lets "." name the workspace root (for listing and stat).
func (w *Workspace) resolve(op, name string, followLast, allowRoot bool) (found, error) {
	return w.resolveFrom(w.cur.root, op, name, followLast, allowRoot)
}

// resolveFrom is resolve in the tree at root: the live tree, or a
// snapshot's (which needs no lock).
func (w *Workspace) resolveFrom(root *tree.Node, op, name string, followLast, allowRoot bool) (found, error) {
	if allowRoot {
		if name == "." {
			return found{node: root}, nil
		}
		// "src/" is how people name a directory; one trailing slash is fine
		// where a directory is meant.
		if len(name) > 1 && name[len(name)-1] == '/' && name[len(name)-2] != '/' {
			name = name[:len(name)-1]
		}
	}
	comps, err := pathguard.CheckPath(name)
	if err != nil {
		return found{}, withOp(err, op)
	}
	if err := w.deny.CheckComps(name, comps); err != nil {
		return found{}, withOp(err, op)
	}
	f, err := w.walk(workerView, root, name, comps, followLast)
	return f, fixOp(err, op)
}

// resolveBilly is the lookup of the trusted go-billy view: billy's path
// syntax (leading slash, "." and ".." cleaned lexically), then the component
// rules and the deny list.
func (w *Workspace) resolveBilly(op, name string, followLast bool) (found, error) {
	comps, err := billyComps(name)
	if err != nil {
		return found{}, withOp(err, op)
	}
	if len(comps) == 0 {
		return found{node: w.cur.root}, nil
	}
	if err := w.deny.CheckComps(name, comps); err != nil {
		return found{}, withOp(err, op)
	}
	f, err := w.walk(billyView, w.cur.root, name, comps, followLast)
	return f, fixOp(err, op)
}

// billyComps cleans a go-billy path and applies the rules that hold in
// every view.
func billyComps(name string) ([]string, error) {
	clean := strings.TrimPrefix(path.Clean("/"+name), "/")
	if clean == "" {
		return nil, nil
	}
	if err := pathguard.CheckChars(clean); err != nil {
		return nil, err
	}
	comps := strings.Split(clean, "/")
	for _, c := range comps {
		if err := pathguard.CheckName(clean, c); err != nil {
			return nil, err
		}
	}
	return comps, nil
}

// fixOp stamps op on errors a lookup made before it knew the operation.
func fixOp(err error, op string) error {
	if err == nil {
		return nil
	}
	if pe, ok := err.(*fs.PathError); ok && pe.Op == "lookup" {
		pe.Op = op
	}
	return withOp(err, op)
}
