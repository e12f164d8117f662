package targets

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// ErrEditsKept: a push to a checked-out branch landed, and airlock brought
// the working tree to it everywhere but at paths the user had changed in
// the meantime, which it left as they were.
var ErrEditsKept = errors.New("kept edits made in the working tree during an airlock push")

// KeptError is a push to a checked-out branch that landed (the branch holds
// New) and was finished in the working tree everywhere but at Paths: they
// held neither what the push found nor what it brings, or the index held
// something the user staged there, so they are the user's and airlock did
// not write them. Nothing is left to recover. The message names each path
// and gives the commands to compare the user's version with the branch's
// and to take the branch's.
type KeptError struct {
	Ref, Worktree string
	Old, New      plumbing.Hash
	// Paths are the kept paths, sorted; Deleted are those of them the
	// branch does not have (the push deleted them, or never had them).
	Paths, Deleted []string
}

func (e *KeptError) Error() string {
	deleted := map[string]bool{}
	for _, p := range e.Deleted {
		deleted[p] = true
	}
	var inNew []string
	for _, p := range e.Paths {
		if !deleted[p] {
			inNew = append(inNew, p)
		}
	}
	wt := shellQuote(e.Worktree)
	var b strings.Builder
	// Every kept path is named, in the prose and in the commands: a
	// command that left some out would not do what it says.
	fmt.Fprintf(&b, "kept your edits at %s: you changed them (or what is in their way) in %s after airlock's push to %s (%s) began updating it, so airlock left them as they are and finished the rest; the branch holds airlock's version",
		strings.Join(e.Paths, ", "), e.Worktree, BranchName(e.Ref), shortid.HashOr(e.New, "(no commit: the ref does not exist)"))
	if len(e.Deleted) > 0 {
		fmt.Fprintf(&b, ", which deletes %s", strings.Join(e.Deleted, ", "))
	}
	if len(inNew) > 0 {
		fmt.Fprintf(&b, ". See how yours differ with `git -C %s diff %s -- %s`", wt, e.New, shellQuotePaths(inNew))
	}
	var take []string
	if len(e.Deleted) > 0 {
		// The kept file of a deleted path is untracked (or staged by the
		// user): git checkout cannot remove it, so it goes by hand, and
		// any entry the user staged with it. update-index names exactly
		// that path (git rm would take a pathspec: the directory the
		// branch may have there, with the files under it).
		var full []string
		for _, p := range e.Deleted {
			full = append(full, strings.TrimSuffix(e.Worktree, "/")+"/"+p)
		}
		take = append(take, fmt.Sprintf("git -C %s update-index --force-remove -- %s && rm -f -- %s", wt, shellQuotePaths(e.Deleted), shellQuotePaths(full)))
	}
	if len(inNew) > 0 {
		take = append(take, fmt.Sprintf("git -C %s checkout %s -- %s", wt, e.New, shellQuotePaths(inNew)))
	}
	fmt.Fprintf(&b, "; take airlock's (dropping yours) with `%s`; or keep yours and commit them", strings.Join(take, " && "))
	return b.String()
}

func (e *KeptError) Unwrap() error { return ErrEditsKept }

// newKeptError describes the kept paths of journal j.
func newKeptError(j journal, kept []touched) *KeptError {
	e := &KeptError{Ref: j.Ref, Worktree: j.Worktree, Old: j.Old, New: j.New}
	for _, p := range kept {
		e.Paths = append(e.Paths, p.Path)
		if p.NewMode == 0 {
			e.Deleted = append(e.Deleted, p.Path)
		}
	}
	sort.Strings(e.Paths)
	sort.Strings(e.Deleted)
	return e
}

// shellQuote quotes s for a POSIX shell when it needs it, so that a
// command in a message can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellQuotePaths(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = shellQuote(p)
	}
	return strings.Join(q, " ")
}

// indexEntry is a path's entries in the index: one at stage 0, or the
// stages of a conflict.
type indexEntry struct {
	mode   filemode.FileMode
	hash   plumbing.Hash
	stages int
}

// is reports whether the index holds exactly mode and hash at the path
// (mode zero: nothing).
func (e indexEntry) is(mode filemode.FileMode, hash plumbing.Hash) bool {
	if mode == 0 {
		return e.stages == 0
	}
	return e.stages == 1 && e.mode == mode && e.hash == hash
}

// indexEntries reads the index of the working tree l names.
func (l *Local) indexEntries(ctx context.Context) (map[string]indexEntry, error) {
	out, err := l.git(ctx, nil, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, err
	}
	idx := map[string]indexEntry{}
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 3 {
			return nil, fmt.Errorf("git ls-files: unexpected line %q", rec)
		}
		mode, err := filemode.New(f[0])
		if err != nil {
			return nil, fmt.Errorf("git ls-files: %q: %w", rec, err)
		}
		e := idx[path]
		e.mode, e.hash, e.stages = mode, plumbing.NewHash(f[1]), e.stages+1
		if f[2] != "0" {
			e.stages++ // a conflict is never "exactly" anything
		}
		idx[path] = e
	}
	return idx, nil
}

// trustsFileMode reads core.fileMode as git does (true unless set false).
func (l *Local) trustsFileMode(ctx context.Context) bool {
	out, err := l.git(ctx, nil, "config", "--type=bool", "--get", "core.fileMode")
	return err != nil || strings.TrimSpace(string(out)) != "false"
}

// keptSet is the paths a roll-forward kept, with every directory above
// them, so that a path that nests with one is found in O(depth).
type keptSet struct {
	paths []touched
	at    map[string]bool // kept paths
	above map[string]bool // their leading directories
}

func (k *keptSet) add(p touched) {
	if k.at == nil {
		k.at, k.above = map[string]bool{}, map[string]bool{}
	}
	k.paths = append(k.paths, p)
	k.at[p.Path] = true
	for d := p.Path; ; {
		i := strings.LastIndexByte(d, '/')
		if i < 0 {
			break
		}
		d = d[:i]
		k.above[d] = true
	}
}

// nests reports whether p is a kept path, lies under one, or has one under
// it: p cannot be written then without touching what was kept.
func (k *keptSet) nests(p string) bool {
	if k.at[p] || k.above[p] {
		return true
	}
	for d := p; ; {
		i := strings.LastIndexByte(d, '/')
		if i < 0 {
			return false
		}
		d = d[:i]
		if k.at[d] {
			return true
		}
	}
}
