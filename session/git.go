package session

import (
	"context"
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// Status is the sandbox's git side as git_status shows it.
type Status struct {
	staging.Status
	// From names where the base came from ("local:/repo"), and Branch its
	// branch; both empty when the base came from nowhere in particular.
	From, Branch string
	// Checkpoints is how many there are; Latest the newest one, with what
	// changed since it.
	Checkpoints int
	Latest      memfs.CheckpointInfo
}

// Status returns the base, the staged commits and the unstaged changes.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Status: s.area.Status()}
	st.Checkpoints, st.Latest = s.ws.LatestCheckpoint()
	if s.base != nil {
		st.From, st.Branch = specKey(s.base), targets.BranchName(s.baseRef)
	}
	return st
}

// Stage makes a commit of the unstaged changes at or under paths (none:
// all of them).
func (s *Session) Stage(paths []string, message string) (*staging.Commit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.area.Stage(paths, message)
	if errors.Is(err, memfs.ErrQuotaExceeded) {
		// Objects no root reaches may be all that stands in the way.
		if s.collectLocked().Objects > 0 {
			c, err = s.area.Stage(paths, message)
		}
	}
	return c, err
}

// Lookup returns the staged commit id names (or abbreviates).
func (s *Session) Lookup(id string) (*staging.Commit, error) {
	return s.area.Lookup(id)
}

// Diff returns a staged commit's changes (id non-empty) or the unstaged
// ones.
func (s *Session) Diff(id string) (*staging.Patch, *staging.Commit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		p, err := s.area.DiffUnstaged()
		return p, nil, err
	}
	c, err := s.area.Lookup(id)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.area.DiffCommit(c.ID)
	return p, c, err
}

// Discarded is what Discard did.
type Discarded struct {
	staging.Discarded
	Commit *staging.Commit // nil for all
	Count  int             // how many staged commits were dropped
	// Withdrawn lists the push requests withdrawn first, because they
	// asked to push commits the discard changes.
	Withdrawn []string
}

// Discard drops the staged commit id (all: every staged commit). A push
// waiting for review whose commits the discard would change is withdrawn
// first; one already on its way to the target makes Discard refuse.
func (s *Session) Discard(id string, all bool) (Discarded, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	commits := s.area.Commits()
	from := 0 // the discard changes commits[from:]
	var c *staging.Commit
	if !all {
		var err error
		if c, err = s.area.Lookup(id); err != nil {
			return Discarded{}, err
		}
		for i, sc := range commits {
			if sc.ID == c.ID {
				from = i
			}
		}
	}
	withdrawn, err := s.unpinLocked(commits[from:], "the worker discarded the commit it asked to push", nil)
	if err != nil {
		return Discarded{}, err
	}
	res := Discarded{Commit: c, Withdrawn: withdrawn}
	if all {
		res.Count = len(commits)
		s.area.DiscardAll()
	} else {
		d, err := s.area.Discard(c.ID)
		if err != nil {
			return res, err
		}
		res.Discarded, res.Count = d, 1
	}
	s.collectLocked()
	return res, nil
}

// PullResult is what Pull did.
type PullResult struct {
	Kind    PullKind
	From    string // the source's id ("local:/repo")
	Head    plumbing.Hash
	Files   int      // files pulled or copied
	Updated []string // paths the target changed that came in
	Rebuilt map[plumbing.Hash]plumbing.Hash
	More    []string // paths brought in for the first time
	Refused []memfs.Refused
	// Withdrawn lists push requests withdrawn because the rebase changed
	// the commits they asked to push.
	Withdrawn []string
}

// PullKind says what a pull did.
type PullKind int

const (
	Copied  PullKind = iota // files copied in as the worker's own
	Seeded                  // the sandbox's first base
	Updated                 // the base moved to the target's head
	Current                 // the base is already the target's head
)

// Pull brings files in from source (a target name; "" for where the base
// came from, or the default target), as git_pull describes.
func (s *Session) Pull(ctx context.Context, source string, paths []string, dest string) (PullResult, error) {
	spec, err := s.resolveSpec(source)
	if err != nil {
		return PullResult{}, err
	}
	for _, p := range paths {
		if q := strings.TrimSuffix(p, "/"); q != "." && q != "" {
			if _, err := memfs.CheckPath(q); err != nil {
				return PullResult{}, err
			}
		}
	}
	if dest != "" {
		if _, err := memfs.CheckPath(strings.TrimSuffix(dest, "/")); err != nil {
			return PullResult{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.collectLocked()
	base := s.base
	if strings.TrimSpace(source) == "" && base != nil {
		// No source: update from where the sandbox's base came from (the
		// branch it forked from, until its first push lands elsewhere).
		spec = base
	}
	sameBase := base != nil && specKey(base) == specKey(spec) && base.Branch == spec.Branch
	switch {
	case dest != "" || (base != nil && !sameBase):
		res, err := s.importFiles(ctx, spec, paths, dest)
		if err != nil {
			return PullResult{}, err
		}
		return PullResult{Kind: Copied, From: specKey(spec), Head: res.Head, Files: res.Files, Updated: res.Updated, Refused: res.Refused}, nil
	case base == nil && len(s.area.Commits()) == 0 && len(s.area.Status().Unstaged) == 0:
		res, err := s.seed(ctx, spec, paths)
		if err != nil {
			return PullResult{}, err
		}
		return PullResult{Kind: Seeded, From: specKey(spec), Head: res.Head, Files: res.Files, Refused: res.Refused}, nil
	}
	return s.syncBaseLocked(ctx, spec, paths)
}

// syncBaseLocked brings the sandbox up to the target's latest commit
// (rebasing staged work onto it) and brings in paths not pulled before.
func (s *Session) syncBaseLocked(ctx context.Context, spec *TargetSpec, paths []string) (PullResult, error) {
	t, ref, err := s.targetRef(ctx, spec)
	if err != nil {
		return PullResult{}, err
	}
	fetchPaths := append(s.area.Pulled(), paths...)
	if s.area.Pulled() == nil {
		fetchPaths = nil
	}
	head, err := t.Fetch(ctx, ref, fetchPaths, s.store)
	if err != nil {
		return PullResult{}, err
	}
	res := PullResult{Kind: Current, From: specKey(spec), Head: head}
	if head != s.area.Base() {
		withdrawn, err := s.unpinLocked(s.area.Commits(), "the worker pulled, which rebuilt the commit on the target's new head", nil)
		if err != nil {
			return PullResult{}, err
		}
		res.Withdrawn = withdrawn
		rb, err := s.area.Rebase(head)
		if err != nil {
			return res, err
		}
		res.Kind, res.Updated, res.Rebuilt, res.Refused = Updated, rb.Updated, rb.Rebuilt, rb.Refused
	}
	if len(paths) > 0 {
		got, refused, err := s.area.PullPaths(paths)
		if err != nil {
			return res, err
		}
		res.More = got
		res.Refused = append(res.Refused, refused...)
	}
	s.base, s.baseRef = spec, ref
	return res, nil
}

// errPushLanding: a commit a change would touch is on its way to a target.
var errPushLanding = errors.New("it is on its way to the target")

func short(h plumbing.Hash) string { return h.String()[:7] }
