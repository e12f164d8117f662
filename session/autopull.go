package session

import (
	"context"
	"errors"
	"io/fs"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
	"github.com/go-git/go-git/v5/plumbing"
)

// autoPlan is what auto_pull does for one repository: the base it seeds
// (nil: none) and its paths, and the files it copies from elsewhere, by
// source, with the targets they come from opened.
type autoPlan struct {
	base      *worker.TargetSpec
	baseAt    opened
	basePaths []string
	keys      []string // the sources copied from, in order
	imports   map[string][]string
	at        map[string]opened
}

// planAutoPull opens the targets r's auto_pull reads from and decides what
// it does; without Session.mu (autoPull does it, under the lock).
func (s *Session) planAutoPull(ctx context.Context, r *repo) (*autoPlan, error) {
	// Entries from the default target's branch make the base (one pull of
	// all their paths; "." means everything). When that branch does not
	// exist yet, entries from another branch of the same repository make
	// the base instead: the new branch forks from the branch its files came
	// from, as `git switch -c` would. Entries from anywhere else come in as
	// the worker's own files.
	pl := &autoPlan{at: map[string]opened{}}
	def := r.cfg.DefaultTarget
	sameRepo := func(src *worker.TargetSpec) bool { return src.ID() == def.ID() }
	var base *worker.TargetSpec
	for _, ap := range r.cfg.AutoPull {
		if sameRepo(ap.Source) && ap.Source.Branch == def.Branch {
			base = def
		}
	}
	// forked: the default branch exists and was forked from another branch
	// of its repository that auto_pull names. Its paths come from the
	// default branch, which has its own history since the fork (what the
	// worker pushed, what others pushed there): as after `git switch
	// reports`, the other branch's later changes come in only when asked
	// for (git_pull with that source).
	forked := false
	if base == nil {
		for _, ap := range r.cfg.AutoPull {
			if sameRepo(ap.Source) {
				o, err := s.open(ctx, def)
				if err != nil {
					return nil, err
				}
				head, err := o.t.Head(ctx, o.ref)
				if err != nil {
					return nil, err
				}
				if !head.IsZero() {
					base, forked, pl.baseAt = def, true, o
				} else {
					base = ap.Source
				}
				break
			}
		}
	}
	all := false
	imports := map[string][]string{}
	specs := map[string]*worker.TargetSpec{}
	for _, ap := range r.cfg.AutoPull {
		if base != nil && sameRepo(ap.Source) && (forked || ap.Source.Branch == base.Branch) {
			all = all || ap.Path == "."
			pl.basePaths = append(pl.basePaths, ap.Path)
			continue
		}
		key := ap.Source.String()
		specs[key] = ap.Source
		imports[key] = append(imports[key], ap.Path)
	}
	if all {
		pl.basePaths = nil
	}
	pl.base, pl.imports = base, imports
	if base != nil && pl.baseAt.t == nil {
		var err error
		if pl.baseAt, err = s.open(ctx, base); err != nil {
			return nil, err
		}
	}
	for k := range imports {
		pl.keys = append(pl.keys, k)
	}
	sort.Strings(pl.keys)
	for _, k := range pl.keys {
		o, err := s.open(ctx, specs[k])
		if err != nil {
			return nil, err
		}
		pl.at[k] = o
	}
	return pl, nil
}

// autoPull does what planAutoPull decided: it fetches into the store, so
// it runs under Session.mu.
func (s *Session) autoPull(ctx context.Context, r *repo, pl *autoPlan) error {
	if pl.base != nil {
		// A default branch that does not exist yet is created by the
		// first push.
		if _, err := s.seed(ctx, r, pl.baseAt, pl.base, pl.basePaths); err != nil && !errors.Is(err, targets.ErrRefNotFound) {
			return err
		}
	}
	for _, k := range pl.keys {
		if _, err := s.importFiles(ctx, r, pl.at[k], pl.imports[k], ""); err != nil {
			return err
		}
	}
	return nil
}

// seed makes the workspace the tree of spec's branch (all, or paths), as
// o (spec's target, opened) has it.
func (s *Session) seed(ctx context.Context, r *repo, o opened, spec *worker.TargetSpec, paths []string) (pullResult, error) {
	t, ref := o.t, o.ref
	head, err := t.Fetch(ctx, ref, paths, s.store)
	if err != nil {
		return pullResult{}, err
	}
	refused, err := r.area.SeedFrom(head, paths)
	if err != nil {
		return pullResult{}, err
	}
	r.base, r.baseRef = spec, ref
	n := 0
	r.ws.Base().Walk(func(memfs.Entry) error { n++; return nil })
	return pullResult{Head: head, Ref: ref, Target: t, Files: n, Refused: refused}, nil
}

type pullResult struct {
	Head    plumbing.Hash
	Ref     string
	Target  targets.Target
	Files   int
	Updated []string
	Refused []memfs.Refused
}

// importFiles copies the files of a branch (o, opened) at or under paths
// into r's part of the workspace (under dest), as the worker's own new
// changes.
func (s *Session) importFiles(ctx context.Context, r *repo, o opened, paths []string, dest string) (pullResult, error) {
	t, ref := o.t, o.ref
	// The session's own store, so that the import counts against the one
	// budget; what only the import needed is collected afterwards.
	head, err := t.Fetch(ctx, ref, paths, s.store)
	if err != nil {
		return pullResult{}, err
	}
	scratch, err := memfs.New(memfs.WithLimits(s.w.Limits), memfs.WithDeny(s.w.Deny...))
	if err != nil {
		return pullResult{}, err
	}
	sa, err := staging.New(scratch, s.store, staging.Config{Author: staging.Signature{Name: "x", Email: "x@x"}})
	if err != nil {
		return pullResult{}, err
	}
	refused, err := sa.SeedFrom(head, paths)
	if err != nil {
		return pullResult{}, err
	}
	res := pullResult{Head: head, Ref: ref, Target: t, Refused: refused}
	err = scratch.Base().Walk(func(e memfs.Entry) error {
		p := e.Path
		if dest != "" {
			p = strings.TrimSuffix(dest, "/") + "/" + p
		}
		if b, ok := r.ws.Base().Lookup(p); ok && b.Same(e) {
			// What the base already holds is not the worker's change.
			return nil
		}
		at := r.path(p) // where it goes in the workspace
		data, werr := e.Content()
		switch {
		case werr != nil:
		case e.Mode&fs.ModeSymlink != 0:
			werr = s.ws.Symlink(string(data), at)
		default:
			if werr = s.ws.WriteFile(at, data, e.Mode.Perm()); werr == nil {
				werr = s.ws.Chmod(at, e.Mode.Perm())
			}
		}
		if werr != nil {
			res.Refused = append(res.Refused, memfs.Refused{Path: p, Err: werr})
			return nil
		}
		res.Updated = append(res.Updated, p)
		res.Files++
		return nil
	})
	return res, err
}
