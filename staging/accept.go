package staging

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging/commitmeta"
	"github.com/airlock-dev/airlock/staging/patch"
)

// Selection is what a reviewer accepted of one staged commit: some of its
// files, whole or hunk by hunk. The hunks are those of the commit's own
// diff against its parent, as EachCommitPatch gives it and hunk.Split
// takes it apart.
type Selection struct {
	Commit plumbing.Hash
	// Message, when not empty, replaces the commit's message.
	Message string
	Files   []FileSelection
}

// FileSelection is what was accepted of one file of a commit: Whole takes
// the file's change as it is (content, mode, creation, deletion);
// otherwise Hunks says which of its hunks.
type FileSelection struct {
	Path  string
	Whole bool
	Hunks []HunkSelection
}

// HunkSelection is one accepted hunk: its place among the file's hunks,
// and, when Lines is not empty, the only changed lines of it accepted.
type HunkSelection = hunk.Selected

// Accepted reports what Accept did.
type Accepted struct {
	// Made is the commits made of what was accepted, oldest first: one
	// for each selected commit whose accepted part is not empty.
	Made []*Commit
	// From is, for each of Made, the staged commit it was made from.
	From []plumbing.Hash
	// LeftOut is what of the accepted commits' changes is unstaged again,
	// file by file.
	LeftOut []LeftOut
	// Rebuilt maps the later staged commits' ids to their new ones.
	Rebuilt map[plumbing.Hash]plumbing.Hash
}

// LeftOut is one file with changes that were not accepted: Hunks counts
// the hunks of its diff from what landed to what the worker had (0 when
// the change has none: binary, a mode change).
type LeftOut struct {
	Path  string
	Hunks int
}

// ErrHunkDepends: an accepted hunk needs a change that was left out.
var ErrHunkDepends = errors.New("it needs a change that was left out")

// EachCommitPatch calls fn with each file patch of the staged commit id
// against its parent, in path order (a type change is two patches of one
// path), with renames and copies as git diff -M -C finds them (what
// Accept's selections name), one at a time.
func (a *Area) EachCommitPatch(id plumbing.Hash, fn func(*FilePatch) error) error {
	a.mu.RLock()
	k := a.indexOf(id)
	if k < 0 {
		err := a.noSuchCommit(id)
		a.mu.RUnlock()
		return err
	}
	parent, tree := a.parentOf(k).tree, a.chain[k].tree
	a.mu.RUnlock()
	return patch.EachRenamed(a.store, parent, tree, fn)
}

func (a *Area) indexOf(id plumbing.Hash) int {
	for i, l := range a.chain {
		if l.id == id {
			return i
		}
	}
	return -1
}

func (a *Area) parentOf(k int) link {
	if k == 0 {
		return a.base
	}
	return a.chain[k-1]
}

// Accept replaces the staged commits up to and including id (what a push
// of id carries) with new commits made of what sel accepts of them: one
// for each staged commit whose accepted part is not empty, in order, on
// the base, each with its own message (or the selection's), author and
// author date. Each accepted hunk is applied, as git apply does, to the
// file as the new commits before it left it. What was not accepted
// becomes unstaged again: nothing in the workspace changes. Commits after
// id are rebuilt on top. If anything cannot be done (a hunk that needs a
// change left out, a later commit that needs one), nothing changes and
// the error says what and what to do.
func (a *Area) Accept(id plumbing.Hash, sel []Selection) (Accepted, error) {
	return a.AcceptAt(id, sel, time.Time{})
}

// AcceptAt is Accept with the commits made dated at (to the second; the
// zero time: now): the same selection of the same commits at the same
// time makes the same commits, so a pick a restart cut is made again as
// it was (the ledger's decision holds the selection and its time).
func (a *Area) AcceptAt(id plumbing.Hash, sel []Selection, at time.Time) (Accepted, error) {
	committed := a.stamp(at)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.inSync(a.tip()); err != nil {
		return Accepted{}, err
	}
	k := a.indexOf(id)
	if k < 0 {
		return Accepted{}, a.noSuchCommit(id)
	}
	bySel := map[plumbing.Hash]*Selection{}
	for i := range sel {
		s := &sel[i]
		if j := a.indexOf(s.Commit); j < 0 || j > k {
			return Accepted{}, fmt.Errorf("accept: %s is not one of the staged commits up to %s", shortid.Hash(s.Commit), shortid.Hash(id))
		}
		if bySel[s.Commit] != nil {
			return Accepted{}, fmt.Errorf("accept: commit %s is selected twice", shortid.Hash(s.Commit))
		}
		bySel[s.Commit] = s
	}
	res := Accepted{Rebuilt: map[plumbing.Hash]plumbing.Hash{}}
	var chain []link
	parent := a.base
	for i, old := range a.chain[:k+1] {
		s := bySel[old.id]
		if s == nil {
			continue
		}
		l, made, err := a.acceptOne(parent, a.parentOf(i), old, s, committed)
		if err != nil {
			return Accepted{}, err
		}
		if !made {
			continue
		}
		chain = append(chain, l)
		res.Made = append(res.Made, l.c)
		res.From = append(res.From, old.id)
		parent = l
	}
	if len(chain) == 0 {
		return Accepted{}, errors.New("accept: nothing of the push was accepted (or all of it is in the base already); reject the push instead")
	}
	for _, old := range a.chain[k+1:] {
		l, err := a.rebuild(parent, old)
		if err != nil {
			return Accepted{}, fmt.Errorf("accept: the later staged commit %s %q needs changes that were not accepted: %w",
				shortid.Hash(old.id), firstLine(old.c.Message), err)
		}
		res.Rebuilt[old.id] = l.id
		chain = append(chain, l)
		parent = l
	}
	leftOut, err := a.leftOut(chain[len(res.Made)-1].tree, a.chain[k].tree)
	if err != nil {
		return Accepted{}, err
	}
	res.LeftOut = leftOut
	a.chain = chain
	a.ws.SetBase(a.tip().snap, a.keep()...)
	return res, nil
}

// leftOut lists what differs from tree from to tree to, with its hunks
// counted.
func (a *Area) leftOut(from, to plumbing.Hash) ([]LeftOut, error) {
	diffs, err := patch.FileDiffs(a.store, from, to)
	out := make([]LeftOut, 0, len(diffs))
	for p, d := range diffs {
		out = append(out, LeftOut{Path: p, Hunks: len(d.Hunks)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// acceptOne makes, on parent, the commit of what s accepts of old (whose
// own parent is was). made is false when that changes nothing.
func (a *Area) acceptOne(parent, was, old link, s *Selection, committed time.Time) (link, bool, error) {
	msg := old.c.Message
	if s.Message != "" {
		m, err := commitmeta.CleanMessage(s.Message)
		if err != nil {
			return link{}, false, fmt.Errorf("accept: the message for %s: %w", shortid.Hash(old.id), err)
		}
		msg = m
	}
	diffs, err := patch.FileDiffs(a.store, was.tree, old.tree)
	if err != nil {
		return link{}, false, err
	}
	var take, paths []string
	var write []memfs.SeedFile
	seen, gone := map[string]bool{}, map[string]bool{}
	for _, fs := range s.Files {
		if seen[fs.Path] {
			return link{}, false, fmt.Errorf("accept: %s of commit %s is selected twice", fs.Path, shortid.Hash(old.id))
		}
		seen[fs.Path] = true
		d, ok := diffs[fs.Path]
		if !ok {
			return link{}, false, fmt.Errorf("accept: commit %s %q does not change %q", shortid.Hash(old.id), firstLine(old.c.Message), fs.Path)
		}
		from, rename := movedFrom(d)
		var sf memfs.SeedFile
		var whole bool
		if from != "" {
			sf, whole, err = a.acceptMoved(parent, was, old, fs, d, from)
		} else {
			sf, whole, err = a.acceptFile(parent, was, old, fs, d)
		}
		if err != nil {
			return link{}, false, err
		}
		if whole {
			take = append(take, fs.Path)
		} else {
			write = append(write, sf)
		}
		paths = append(paths, fs.Path)
		if rename && !gone[from] {
			// The old name goes as the commit has it: gone, once.
			gone[from] = true
			take, paths = append(take, from), append(paths, from)
		}
	}
	snap, err := a.acceptedSnapshot(parent.snap, old.snap, take, write)
	if err != nil {
		return link{}, false, err
	}
	sort.Strings(paths)
	edits, err := a.editsFor(snap, paths)
	if err != nil {
		return link{}, false, err
	}
	l, err := a.commitEdits(parent, edits, msg, old.c.Author.When, committed)
	if errors.Is(err, ErrNothingToStage) {
		return link{}, false, nil
	}
	if err != nil {
		return link{}, false, fmt.Errorf("accept: %w", err)
	}
	l.snap, l.paths = snap, paths
	return l, true, nil
}

// acceptedSnapshot is parent with take as src has them and write written.
func (a *Area) acceptedSnapshot(parent, src *memfs.Snapshot, take []string, write []memfs.SeedFile) (*memfs.Snapshot, error) {
	snap := parent
	var err error
	if len(take) > 0 {
		if snap, err = a.ws.Overlay(snap, src, take); err != nil {
			return nil, fmt.Errorf("accept: %w: %v", ErrConflict, err)
		}
	}
	if len(write) == 0 {
		return snap, nil
	}
	files, refused, err := a.ws.NewSnapshot(write)
	if err != nil {
		return nil, fmt.Errorf("accept: %w", err)
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("accept: %s: %w", refused[0].Path, refused[0].Err)
	}
	var paths []string
	for _, f := range write {
		paths = append(paths, f.Path)
	}
	if snap, err = a.ws.Overlay(snap, files, paths); err != nil {
		return nil, fmt.Errorf("accept: %w: %v", ErrConflict, err)
	}
	return snap, nil
}

// acceptFile works out what the accepted part of one file's change makes
// of the file on parent: whole is true when it is the commit's version
// as it is (taken from old's snapshot), otherwise sf is the new content.
func (a *Area) acceptFile(parent, was, old link, fs FileSelection, d *patch.FileDiff) (sf memfs.SeedFile, whole bool, err error) {
	p := fs.Path
	before, hadBefore := was.snap.Lookup(p)
	now, hasNow := parent.snap.Lookup(p)
	after, hasAfter := old.snap.Lookup(p)
	// The file is on parent as the commit found it: its change applies as
	// it is.
	same := hadBefore == hasNow && (!hasNow || before.Same(now))
	if !same && hadBefore && hasNow {
		h1, _, err1 := entryBlob(before)
		h2, _, err2 := entryBlob(now)
		same = err1 == nil && err2 == nil && h1 == h2 && before.Mode == now.Mode
	}
	all := acceptsAll(fs, d)
	if all && same {
		return memfs.SeedFile{}, true, nil
	}
	where := fmt.Sprintf("%s in commit %s %q", p, shortid.Hash(old.id), firstLine(old.c.Message))
	if all && !hasAfter {
		// A deletion removes the content its diff shows: the file on
		// parent must hold it (its mode aside, as git apply warns only),
		// or the commit would remove lines the reviewer never saw.
		if hasNow {
			h1, _, err1 := entryBlob(before)
			h2, _, err2 := entryBlob(now)
			if err1 == nil && err2 == nil && h1 == h2 {
				return memfs.SeedFile{}, true, nil
			}
		}
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s deletes the file as the commit found it, but it is not so after the accepted changes before it: %w; accept the earlier change to it too, or leave this file out",
			where, ErrHunkDepends)
	}
	if !d.Text() {
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s is a binary, symlink or type change, taken whole or not at all, and the file is not as the commit found it: %w; accept the earlier change to it too, or leave this file out",
			where, ErrHunkDepends)
	}
	hunks, index := d.Hunks, []int(nil)
	if !fs.Whole {
		if len(fs.Hunks) == 0 {
			return memfs.SeedFile{}, false, fmt.Errorf("accept: no hunk of %s is selected; select some, accept it whole, or leave the file out", where)
		}
		if hunks, index, err = hunk.Pick(d.Hunks, fs.Hunks); err != nil {
			return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: %w", where, err)
		}
	}
	var base []byte
	if hasNow {
		if _, base, err = entryBlob(now); err != nil {
			return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: %w", p, err)
		}
	}
	data, err := hunk.Apply(base, hunks)
	var nm *hunk.NoMatchError
	if errors.As(err, &nm) {
		idx := nm.Index
		if index != nil {
			idx = index[idx]
		}
		return memfs.SeedFile{}, false, fmt.Errorf("accept: hunk %d (%s) of %s does not apply to the file as the accepted changes before it leave it (%s): %w; accept that earlier change too, or leave this hunk out",
			idx, nm.Header, where, nm.Why, ErrHunkDepends)
	}
	if err != nil {
		return memfs.SeedFile{}, false, fmt.Errorf("accept: %s: %w", where, err)
	}
	mode := after.Mode
	switch {
	case hasNow && (!fs.Whole || !hasAfter):
		// A change taken in part keeps the file's mode: a mode change is
		// part of the whole file's change, as git add -p asks it apart.
		mode = now.Mode
	case !hasAfter:
		mode = before.Mode
	}
	return memfs.SeedFile{Path: p, Mode: mode.Perm(), Data: data, NoCopy: true}, false, nil
}

// everyLine reports whether h names each changed line of its hunk once:
// the hunk whole, as its text is then the same (a deletion so accepted
// deletes the file, as git apply of that text does).
func everyLine(hunks []string, h HunkSelection) bool {
	if h.Index < 0 || h.Index >= len(hunks) {
		return false
	}
	changed, err := hunk.Changed(hunks[h.Index])
	if err != nil || len(changed) != len(h.Lines) {
		return false
	}
	seen := make([]bool, len(changed))
	for _, n := range h.Lines {
		if n < 0 || n >= len(changed) || seen[n] {
			return false
		}
		seen[n] = true
	}
	return true
}
