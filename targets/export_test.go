package targets

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/gitenv"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// InterruptPush leaves the working-tree repository at dir as a push of
// ref from old to new (commits it already holds) that was killed right
// after it moved the ref: its temporary ref and journal in place, the ref
// at new, the working tree and the index untouched. The caller then plays
// a partial roll-forward and the user's edits, and recovers.
func InterruptPush(ctx context.Context, dir, ref string, old, new plumbing.Hash) error {
	l := &Local{path: dir}
	out, err := l.git(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", old.String(), new.String())
	if err != nil {
		return err
	}
	// ":oldmode newmode oldhash newhash status\0path\0" per path.
	var paths []touched
	f := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(f[i], ":"))
		if len(meta) != 5 {
			return fmt.Errorf("git diff-tree: %q", f[i])
		}
		om, err := filemode.New(meta[0])
		if err != nil {
			return err
		}
		nm, err := filemode.New(meta[1])
		if err != nil {
			return err
		}
		p := touched{Path: f[i+1], OldMode: om, NewMode: nm, OldHash: plumbing.NewHash(meta[2]), NewHash: plumbing.NewHash(meta[3])}
		if om == 0 {
			p.OldHash = plumbing.ZeroHash
		}
		if nm == 0 {
			p.NewHash = plumbing.ZeroHash
		}
		paths = append(paths, p)
	}
	lockDir, _, unlock, err := l.pushLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	wt, err := l.checkedOutIn(ctx, ref)
	if err != nil || wt == "" {
		return fmt.Errorf("%s is not checked out in %s: %v", ref, dir, err)
	}
	temp := "refs/airlock/incoming/interrupted"
	if _, err := l.git(ctx, nil, "update-ref", temp, new.String()); err != nil {
		return err
	}
	j := journal{Ref: ref, Old: old, New: new, Worktree: wt, TempRef: temp, Paths: paths}
	if err := writeFileSync(filepath.Join(lockDir, "push-journal.json"), j); err != nil {
		return err
	}
	_, err = l.git(ctx, nil, "update-ref", ref, new.String(), old.String())
	return err
}

// JournalPath is where a working-tree repository's push journal is.
func JournalPath(dir string) string {
	return filepath.Join(dir, ".git", "airlock", "push-journal.json")
}

// WorktreeHashes counts the files the lazy reads of l's source took from
// its working tree after hashing them (the others git's index vouched for).
func WorktreeHashes(l *Local) int64 {
	l.srcMu.Lock()
	defer l.srcMu.Unlock()
	if l.src == nil {
		return -1
	}
	return l.src.WorktreeHashes()
}

// PulledSource is the blob source l's Fetch made (nil before one): a
// pull's, with the sizes it listed and, in a working tree, its files.
func PulledSource(l *Local) staging.BlobSource {
	l.srcMu.Lock()
	defer l.srcMu.Unlock()
	if l.src == nil {
		return nil
	}
	return l.src
}

// SetTestHooks makes the git airlock runs look for hooks in dir, a
// directory of the test's own (a repository's hooks never run), until
// the test ends: how a test holds git-receive-pack between two steps.
func SetTestHooks(t interface{ Cleanup(func()) }, dir string) {
	t.Cleanup(gitenv.SetTestHooks(dir))
}
