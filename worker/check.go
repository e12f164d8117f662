package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/gitdir"
)

// Check looks at the repositories the worker names, as airlock serve starts:
// each local target's and auto_pull source's path must be in a git
// repository of its type, and the branch each auto_pull source pulls must
// exist. A default target's branch that does not exist is fine: the first
// push creates it (forking from the branch auto_pull takes files from). A
// worker file's mistakes come as *ConfigError with the file, line and
// column; the default worker's say how to run airlock serve instead.
// GitHub targets are not looked at here: that needs the network.
//
// It runs no git process: the repositories' own files say all of it
// (gitdir.ProbeLocal), each repository is probed once, and a branch is
// read as the session reads it when it pulls.
func (w *Worker) Check() error {
	probes := map[string]*gitdir.Probe{}
	own := map[string]bool{} // each repository's default target and branch
	for _, r := range w.RepoList() {
		own[r.DefaultTarget.ID()+"\x00"+r.DefaultTarget.Branch] = true
	}
	for _, ref := range w.Refs {
		spec := ref.Spec
		kind := spec.Kind()
		if kind == nil || !kind.Local {
			continue
		}
		p := probes[spec.Path]
		if p == nil {
			var err error
			if p, err = gitdir.ProbeLocal(spec.Path); err != nil {
				return w.pathError(ref, err)
			}
			probes[spec.Path] = p
		}
		switch {
		case !kind.Bare && p.Bare && w.File == "":
			return fmt.Errorf("%s is a bare repository, and airlock serve without --worker works on a working tree: run it in a clone, or give --worker FILE with a %s target", p.Path, targets.LocalKind(true).Name)
		case !kind.Bare && p.Bare:
			return w.refError(ref, ref.TypeAt, ".type", "%s is a bare repository; write type: %s for it", p.Path, targets.LocalKind(true).Name)
		case kind.Bare && !p.Bare:
			return w.refError(ref, ref.TypeAt, ".type", "%s is a working-tree repository (its git directory is %s); write type: %s for it", p.Path, p.GitDir, targets.LocalKind(false).Name)
		}
		if ref.Pull {
			if err := w.checkPull(ref, p, own[spec.ID()+"\x00"+spec.Branch]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPull checks that the branch an auto_pull source pulls exists. own:
// the source is its repository's default target, whose branch the first
// push creates; it may be missing only where nothing could be forked from
// (a repository without a branch, or, for the default worker, an orphan
// branch checked out), as git commit there makes a first commit.
func (w *Worker) checkPull(ref RepoRef, p *gitdir.Probe, own bool) error {
	branch := ref.Spec.Branch
	if branch == "" {
		if p.Head == "" {
			if w.File == "" {
				return fmt.Errorf("airlock serve without --worker works on the branch checked out in %s, and none is (HEAD is detached at %s): check one out (git switch NAME), or give --worker FILE naming the branch",
					p.Path, shortid.Hash(p.Detached))
			}
			return w.refError(ref, ref.At, "", "%s has no branch checked out (HEAD is detached at %s), and this names none: add branch: NAME",
				p.ID(), shortid.Hash(p.Detached))
		}
		branch = p.Head
	}
	full, err := targets.BranchRef(branch)
	if err != nil {
		return w.refError(ref, ref.BranchAt, ".branch", "%v", err)
	}
	heads, err := p.Heads(full)
	if err != nil {
		return w.refError(ref, ref.At, "", "%v", err)
	}
	if !heads[0].IsZero() || own && w.File == "" {
		return nil
	}
	names, err := p.BranchNames()
	if err != nil {
		return w.refError(ref, ref.At, "", "%v", err)
	}
	name := targets.BranchName(full)
	switch {
	case len(names) == 0 && own:
		return nil
	case len(names) == 0:
		return w.refError(ref, ref.BranchAt, ".branch", "branch %s does not exist in %s, which has no commits yet; pull from a repository with commits, or leave this auto_pull entry out",
			name, p.ID())
	case own:
		return w.refError(ref, ref.BranchAt, ".branch", "branch %s does not exist in %s (its branches: %s); the first push creates it, but auto_pull needs a branch to take files from: "+
			"name the branch it forks from, e.g. source: { type: %s, path: %s, branch: %s }",
			name, p.ID(), listSome(names), ref.Spec.Type, ref.Spec.Path, names[0])
	}
	return w.refError(ref, ref.BranchAt, ".branch", "branch %s does not exist in %s; its branches are %s", name, p.ID(), listSome(names))
}

// pathError says why a target's path is no repository.
func (w *Worker) pathError(ref RepoRef, err error) error {
	path := ref.Spec.Path
	create := "git init " + path
	if ref.Spec.Kind().Bare {
		create = "git init --bare " + path
	}
	if w.File == "" {
		return fmt.Errorf("airlock serve without --worker works on the git repository of its current directory: %v; run it in a repository (or make this one with git init), or give --worker FILE", err)
	}
	fi, serr := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return w.refError(ref, ref.PathAt, ".path", "%s does not exist; give the path of a git repository (a relative path is taken from the worker file's directory), or make one with %s", path, create)
	case errors.Is(err, gitdir.ErrNotRepository) && filepath.Base(path) == ".git":
		return w.refError(ref, ref.PathAt, ".path", "%v; give %s instead", err, filepath.Dir(path))
	case errors.Is(err, gitdir.ErrNotRepository) && (serr != nil || !fi.IsDir()):
		return w.refError(ref, ref.PathAt, ".path", "%v; give the path of a git repository", err)
	case errors.Is(err, gitdir.ErrNotRepository):
		return w.refError(ref, ref.PathAt, ".path", "%v; make it one with %s, or give the path of a repository", err, create)
	}
	return w.refError(ref, ref.PathAt, ".path", "%s cannot be read: %v", path, err)
}

// refError is a mistake about ref, at (or, where the file does not say it
// there, at the entry), under the ref's key and suffix.
func (w *Worker) refError(ref RepoRef, at Pos, suffix, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if w.File == "" {
		return errors.New(msg)
	}
	key := ref.Key
	if at.Line == 0 {
		at = ref.At
	} else {
		key += suffix
	}
	return &ConfigError{File: w.File, Line: at.Line, Column: at.Column, Key: key, Msg: msg}
}

// listSome lists at most 10 names.
func listSome(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}
