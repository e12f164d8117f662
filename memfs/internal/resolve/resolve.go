package resolve

import (
	"errors"
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

// View selects whose rules a lookup follows.
type View uint8

const (
	// Worker is the worker's: the path guard, the deny list and the
	// symlink policy (relative targets that stay inside) at every hop.
	Worker View = iota
	// Billy is go-billy's, for go-git and other trusted code: absolute
	// symlink targets start at the workspace root and ".." stops there, as
	// in go-billy's memfs. Names still pass the component rules and the deny
	// list; nothing in this view can reach the host either way.
	Billy
)

// Found is where a lookup ended.
type Found struct {
	Comps   []string   // canonical path: no symlink among the parents
	Node    *tree.Node // nil when the path does not exist
	Missing int        // how many trailing components do not exist
	Hops    int        // symlinks followed
}

// Path is the canonical path found, slash-separated.
func (f Found) Path() string { return strings.Join(f.Comps, "/") }

// Walk resolves comps from root. Symlinks among the parents are followed,
// and the last one too when followLast is set.
func Walk(deny *pathguard.DenyList, v View, root *tree.Node, name string, comps []string, followLast bool) (Found, error) {
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
				if v == Billy {
					continue
				}
				return Found{}, pathguard.Refuse(name, pathguard.RuleSymlinkEscape, pathguard.ErrOutsideSandbox,
					"a symlink on the way leads above the workspace root; only links that stay inside the workspace can be followed")
			}
			names, stack = names[:len(names)-1], stack[:len(stack)-1]
			continue
		}
		dir := stack[len(stack)-1]
		child := dir.Child(c)
		if child == nil {
			f := Found{Comps: names, Hops: hops}
			for _, r := range append([]string{c}, pending...) {
				switch r {
				case "", ".":
				case "..":
					// POSIX resolves "missing/.." as an error, not as a no-op.
					return Found{}, &fs.PathError{Op: "lookup", Path: name, Err: fs.ErrNotExist}
				default:
					f.Comps = append(f.Comps, r)
					f.Missing++
				}
			}
			if hops > 0 {
				return f, checkHopDeny(deny, name, f.Comps)
			}
			return f, nil
		}
		last := len(pending) == 0
		if child.Kind == tree.KindSymlink && (!last || followLast) {
			hops++
			if hops > maxSymlinkHops {
				return Found{}, &fs.PathError{Op: "lookup", Path: name, Err: syscall.ELOOP}
			}
			target := string(child.Data)
			if err := CheckTargetIn(v, name, target); err != nil {
				return Found{}, err
			}
			if strings.HasPrefix(target, "/") { // billy View only
				names, stack = names[:0], stack[:1]
			}
			pending = append(strings.Split(target, "/"), pending...)
			continue
		}
		if !last && child.Kind != tree.KindDir {
			return Found{}, &fs.PathError{Op: "lookup", Path: name, Err: syscall.ENOTDIR}
		}
		names = append(names, c)
		stack = append(stack, child)
		if hops > 0 {
			if err := checkHopDeny(deny, name, names); err != nil {
				return Found{}, err
			}
		}
	}
	return Found{Comps: names, Node: stack[len(stack)-1], Hops: hops}, nil
}

// CheckTargetIn applies the view's rules to a symlink's target: the worker's
// symlink policy, or in the billy View the component rules, so that no link
// can lead to ".git" or a reserved name even there.
func CheckTargetIn(v View, name, target string) error {
	if v == Worker {
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
func checkHopDeny(deny *pathguard.DenyList, name string, comps []string) error {
	if len(comps) == 0 {
		return nil
	}
	if err := deny.CheckComps(name, comps); err != nil {
		err.Detail = "through a symlink, " + err.Detail
		return err
	}
	return nil
}

// From is the one way a worker's path enters a tree (memfs's resolve):
// the path guard, the deny list, then a lookup under the worker's symlink
// policy, in the tree at root (the live tree, or a snapshot's). allowRoot
// lets "." name the root (for listing and stat).
func From(deny *pathguard.DenyList, root *tree.Node, op, name string, followLast, allowRoot bool) (Found, error) {
	if allowRoot {
		if name == "." {
			return Found{Node: root}, nil
		}
		// "src/" is how people name a directory; one trailing slash is fine
		// where a directory is meant.
		if len(name) > 1 && name[len(name)-1] == '/' && name[len(name)-2] != '/' {
			name = name[:len(name)-1]
		}
	}
	comps, err := pathguard.CheckPath(name)
	if err != nil {
		return Found{}, WithOp(err, op)
	}
	if err := deny.CheckComps(name, comps); err != nil {
		return Found{}, WithOp(err, op)
	}
	f, err := Walk(deny, Worker, root, name, comps, followLast)
	return f, fixOp(err, op)
}

// billyComps cleans a go-billy path and applies the rules that hold in
// every View.
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
	return WithOp(err, op)
}

// ForBilly is the lookup of the trusted go-billy view: billy's path
// syntax (leading slash, "." and ".." cleaned lexically), then the component
// rules and the deny list.
func ForBilly(deny *pathguard.DenyList, root *tree.Node, op, name string, followLast bool) (Found, error) {
	comps, err := billyComps(name)
	if err != nil {
		return Found{}, WithOp(err, op)
	}
	if len(comps) == 0 {
		return Found{Node: root}, nil
	}
	if err := deny.CheckComps(name, comps); err != nil {
		return Found{}, WithOp(err, op)
	}
	f, err := Walk(deny, Billy, root, name, comps, followLast)
	return f, fixOp(err, op)
}

// WithOp stamps op on a refusal and passes other errors through.
func WithOp(err error, op string) error {
	var e *pathguard.Error
	if errors.As(err, &e) && e.Op == "" {
		e.Op = op
	}
	return err
}
