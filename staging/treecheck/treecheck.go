package treecheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
)

// ErrRefusedTree: a tree holds an entry that may not leave the sandbox.
var ErrRefusedTree = errors.New("tree refused")

// ErrRefusedContent: a file would make a tree that git fsck refuses.
var ErrRefusedContent = errors.New("content refused")

// Tree rules beyond the path guard's (pathguard.Rule).
const (
	RuleMode       pathguard.Rule = "invalid-mode"
	RuleDuplicate  pathguard.Rule = "duplicate-entry"
	RuleUnsorted   pathguard.Rule = "tree-not-sorted"
	RuleGitFile    pathguard.Rule = "git-file-content"
	RuleMissing    pathguard.Rule = "missing-object"
	RuleObjectSize pathguard.Rule = "object-too-large"
)

// Refusal is one entry of a tree that may not leave the sandbox, and why.
type Refusal struct {
	Path string
	Rule pathguard.Rule
	Why  string
}

func (r Refusal) String() string { return fmt.Sprintf("%s (rule %s: %s)", r.Path, r.Rule, r.Why) }

// TreeError lists what makes a tree unfit to leave, at most a few entries.
type TreeError struct {
	Tree     plumbing.Hash
	Refusals []Refusal
	More     int // refusals past the ones listed
}

func (e *TreeError) Error() string {
	var parts []string
	for _, r := range e.Refusals {
		parts = append(parts, r.String())
	}
	more := ""
	if e.More > 0 {
		more = fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("%v: tree %s holds entries that git or a checkout would treat as dangerous: %s%s; nothing was pushed",
		ErrRefusedTree, shortid.Hash(e.Tree), strings.Join(parts, "; "), more)
}

func (e *TreeError) Unwrap() error { return ErrRefusedTree }

// maxListed bounds the refusals an error carries.
const maxListed = 20

// CheckTree walks the whole of tree, as a checkout of it would, and refuses
// it if any entry breaks the rules of the workspace's path guard (no "..",
// no .git in any disguise, no absolute or escaping symlinks, names a
// filesystem reads as written), has a mode git does not write, is named
// twice, is out of git's order, or is one of git's own files (.gitmodules,
// .gitattributes) with content git fsck refuses. Every tree that leaves the
// sandbox passes it: a tree from a hostile repository is no safer than a
// worker's.
func CheckTree(s Objects, tree plumbing.Hash) error {
	c := newTreeChecker(s, false)
	if _, err := c.tree(tree, "", 0); err != nil {
		return err
	}
	if len(c.refused) > 0 {
		return c.treeError(tree)
	}
	return nil
}

// CheckTrees is CheckTree for several trees (the commits of a push), with
// subtrees they share judged once.
func CheckTrees(s Objects, trees ...plumbing.Hash) error {
	c := newTreeChecker(s, false)
	for _, t := range trees {
		if _, err := c.tree(t, "", 0); err != nil {
			return err
		}
		if len(c.refused) > 0 {
			return c.treeError(t)
		}
	}
	return nil
}

// CleanTree returns tree without the entries CheckTree would refuse (a
// directory left empty goes too, and a tree out of order is rewritten in
// git's order), and the entries it left out. Subtrees without refusals are
// kept by hash. A tree that is clean comes back unchanged.
func CleanTree(s Objects, tree plumbing.Hash) (plumbing.Hash, []Refusal, error) {
	c := newTreeChecker(s, true)
	h, err := c.tree(tree, "", 0)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if h.IsZero() {
		if h, err = s.Put(&object.Tree{}); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	return h, c.refused, nil
}

type treeChecker struct {
	s       Objects
	clean   bool
	refused []Refusal
	// done memoises subtrees already judged at the same depth and prefix
	// length (what symlink escapes and path lengths depend on): a tree
	// shared by many commits or directories is read once.
	done map[treeKey]plumbing.Hash
}

type treeKey struct {
	h           plumbing.Hash
	depth, plen int
}

func newTreeChecker(s Objects, clean bool) *treeChecker {
	return &treeChecker{s: s, clean: clean, done: map[treeKey]plumbing.Hash{}}
}

func (c *treeChecker) treeError(tree plumbing.Hash) error {
	e := &TreeError{Tree: tree, Refusals: c.refused}
	if len(e.Refusals) > maxListed {
		e.More, e.Refusals = len(e.Refusals)-maxListed, e.Refusals[:maxListed]
	}
	return e
}

func (c *treeChecker) refuse(p string, rule pathguard.Rule, format string, args ...any) {
	c.refused = append(c.refused, Refusal{Path: p, Rule: rule, Why: fmt.Sprintf(format, args...)})
}

// tree judges the tree h at prefix and returns what is left of it (zero
// when nothing is; h itself when nothing was refused).
func (c *treeChecker) tree(h plumbing.Hash, prefix string, depth int) (plumbing.Hash, error) {
	if h.IsZero() || h == emptyTree {
		return h, nil
	}
	key := treeKey{h, depth, len(prefix)}
	if out, ok := c.done[key]; ok {
		return out, nil
	}
	if len(prefix) > pathguard.MaxPathBytes {
		// Path length bounds depth, so a hostile chain of directories
		// costs no more than one path.
		c.refuse(clip(prefix), pathguard.RulePathTooLong, "the directory is nested past the %d-byte path limit", pathguard.MaxPathBytes)
		return plumbing.ZeroHash, nil
	}
	t, err := c.readTree(h, prefix)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if t == nil {
		return plumbing.ZeroHash, nil
	}
	changed := t.changed
	kept := make([]object.TreeEntry, 0, len(t.Entries))
	seen := make(map[string]bool, len(t.Entries))
	for i, e := range t.Entries {
		p := join(prefix, e.Name)
		if seen[e.Name] {
			c.refuse(p, RuleDuplicate, "the tree names %q twice; a checkout would write one over the other", e.Name)
			changed = true
			continue
		}
		seen[e.Name] = true
		if i > 0 && !gitTreeLess(t.Entries[i-1], e) && !c.clean {
			c.refuse(p, RuleUnsorted, "the entries of %s are not in git's order, which git fsck refuses", orRoot(prefix))
		}
		ne, ok, err := c.entry(e, p, depth)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if !ok {
			changed = true
			continue
		}
		changed = changed || ne.Hash != e.Hash
		kept = append(kept, ne)
	}
	if !sort.SliceIsSorted(kept, func(i, j int) bool { return gitTreeLess(kept[i], kept[j]) }) {
		sort.Slice(kept, func(i, j int) bool { return gitTreeLess(kept[i], kept[j]) })
		changed = true
	}
	out := h
	switch {
	case !changed || !c.clean:
	case len(kept) == 0:
		out = plumbing.ZeroHash
	default:
		if out, err = c.s.Put(&object.Tree{Entries: kept}); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	c.done[key] = out
	return out, nil
}

// rawTree is a tree as its bytes say, before go-git's decoding, which
// rewrites modes it does not know into ones it does.
type rawTree struct {
	Entries []object.TreeEntry
	changed bool // an entry was left out while reading
}

// readTree reads tree h from its encoded bytes. It returns nil (and
// records why) when the tree is missing or cannot be read as git would.
func (c *treeChecker) readTree(h plumbing.Hash, prefix string) (*rawTree, error) {
	o, err := c.s.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			c.refuse(orRoot(prefix), RuleMissing, "tree %s is not in the sandbox", shortid.Hash(h))
			return nil, nil
		}
		return nil, fmt.Errorf("reading tree %s at %q: %w", shortid.Hash(h), orRoot(prefix), err)
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(rd)
	rd.Close()
	if err != nil {
		return nil, err
	}
	t := &rawTree{}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+21 {
			c.refuse(orRoot(prefix), RuleMode, "tree %s is malformed", shortid.Hash(h))
			return nil, nil
		}
		modeText, name := string(data[:sp]), string(data[sp+1:nul])
		var eh plumbing.Hash
		copy(eh[:], data[nul+1:nul+21])
		data = data[nul+21:]
		mode, ok := gitModes[modeText]
		if !ok {
			c.refuse(join(prefix, name), RuleMode, "mode %s is not one git writes (100644, 100755, 120000, 40000, 160000)", modeText)
			t.changed = true
			continue
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: mode, Hash: eh})
	}
	return t, nil
}

// gitModes are the modes git writes, exactly as it writes them: fsck
// --strict refuses a zero-padded "040000" or a group-writable "100664".
var gitModes = map[string]filemode.FileMode{
	"100644": filemode.Regular, "100755": filemode.Executable, "120000": filemode.Symlink,
	"40000": filemode.Dir, "160000": filemode.Submodule,
}

// entry judges one entry; ok is false when it must go.
func (c *treeChecker) entry(e object.TreeEntry, p string, depth int) (object.TreeEntry, bool, error) {
	if _, err := pathguard.CheckPath(p); err != nil {
		rule := pathguard.RuleOf(err)
		var me *memfs.Error
		why := err.Error()
		if errors.As(err, &me) {
			why = me.Detail
		}
		c.refuse(clip(p), rule, "%s", why)
		return e, false, nil
	}
	switch e.Mode {
	case filemode.Dir:
		sub, err := c.tree(e.Hash, p, depth+1)
		if err != nil || sub.IsZero() {
			return e, false, err
		}
		e.Hash = sub
		return e, true, nil
	case filemode.Regular, filemode.Executable, filemode.Symlink:
	case filemode.Submodule:
		// A gitlink names a commit of another repository; a checkout
		// makes an empty directory. Its name was checked above.
		return e, true, nil
	}
	special := GitFileName(path.Base(p))
	if e.Mode != filemode.Symlink && special == "" {
		return e, true, nil
	}
	size, err := c.s.BlobSize(e.Hash)
	if err != nil {
		c.refuse(p, RuleMissing, "its content (blob %s) is not in the sandbox", shortid.Hash(e.Hash))
		return e, false, nil
	}
	if size > maxGitFileBytes {
		c.refuse(p, RuleObjectSize, "a %d-byte %s is larger than git reads (%d bytes)", size, kindOf(e.Mode, special), maxGitFileBytes)
		return e, false, nil
	}
	data, err := c.s.ReadBlob(e.Hash)
	if err != nil {
		return e, false, fmt.Errorf("reading %s: %w", p, err)
	}
	if e.Mode == filemode.Symlink {
		if err := pathguard.CheckSymlink(p, string(data)); err != nil {
			why := err.Error()
			var me *memfs.Error
			if errors.As(err, &me) {
				why = me.Detail
			}
			c.refuse(p, pathguard.RuleOf(err), "%s", why)
			return e, false, nil
		}
		if special != "" {
			c.refuse(p, RuleGitFile, "%s is a symlink, which git refuses for its own files", special)
			return e, false, nil
		}
		return e, true, nil
	}
	if err := CheckGitFile(p, special, data); err != nil {
		c.refuse(p, RuleGitFile, "%s", err.Error())
		return e, false, nil
	}
	return e, true, nil
}

// maxGitFileBytes is the most git fsck reads of .gitmodules (and the most a
// symlink target may hold).
const maxGitFileBytes = 1 << 20

func kindOf(m filemode.FileMode, special string) string {
	if m == filemode.Symlink {
		return "symlink target"
	}
	return special
}

// gitTreeLess is git's order of tree entries: by name, a directory's name
// compared as if it ended in "/".
func gitTreeLess(a, b object.TreeEntry) bool {
	an, bn := a.Name, b.Name
	if a.Mode == filemode.Dir {
		an += "/"
	}
	if b.Mode == filemode.Dir {
		bn += "/"
	}
	return an < bn
}

func orRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func clip(p string) string {
	if len(p) <= 200 {
		return p
	}
	return p[:200] + "..."
}

// CheckReads reports whether CheckTree reads the content of an entry named
// name with mode m (symlinks, and git's own files in any disguise). A
// partial fetch brings those blobs whatever paths it was asked for, so that
// every tree can be judged whole.
func CheckReads(name string, m filemode.FileMode) bool {
	return m == filemode.Symlink || GitFileName(name) != ""
}
