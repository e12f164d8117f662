package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/staging/commitmeta"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
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
	// Rejected lists the staged commits that carry a change the reviewer
	// rejected: git_discard without a commit id drops them.
	Rejected []plumbing.Hash
}

// sole is the repository of a single-repository session, for the methods
// of Session that stand for it; a multi-repository session's git side is
// reached through Repo.
func (s *Session) sole() (*Repo, error) { return s.Repo("") }

// Status returns the base, the staged commits and the unstaged changes of
// a single-repository session (see Repo.Status).
func (s *Session) Status() Status {
	h, err := s.sole()
	if err != nil {
		return Status{}
	}
	return h.Status()
}

// Stage is Repo.Stage for a single-repository session.
func (s *Session) Stage(paths []string, message string) (*staging.Commit, error) {
	h, err := s.sole()
	if err != nil {
		return nil, err
	}
	return h.Stage(paths, message)
}

// Lookup is Repo.Lookup for a single-repository session.
func (s *Session) Lookup(id string) (*staging.Commit, error) {
	h, err := s.sole()
	if err != nil {
		return nil, err
	}
	return h.Lookup(id)
}

// Diff is Repo.Diff for a single-repository session.
func (s *Session) Diff(id string) (*staging.Patch, *staging.Commit, error) {
	h, err := s.sole()
	if err != nil {
		return nil, nil, err
	}
	return h.Diff(id)
}

// Discard is Repo.Discard for a single-repository session.
func (s *Session) Discard(id string, all bool) (Discarded, error) {
	h, err := s.sole()
	if err != nil {
		return Discarded{}, err
	}
	return h.Discard(id, all)
}

// Pull is Repo.Pull for a single-repository session.
func (s *Session) Pull(ctx context.Context, source string, paths []string, dest string) (PullResult, error) {
	h, err := s.sole()
	if err != nil {
		return PullResult{}, err
	}
	return h.Pull(ctx, source, paths, dest)
}

// Push is Repo.Push for a single-repository session.
func (s *Session) Push(ctx context.Context, commitID, target string, progress Progress) (PushResult, error) {
	h, err := s.sole()
	if err != nil {
		return PushResult{}, err
	}
	return h.Push(ctx, commitID, target, progress)
}

// Status returns the repository's base, staged commits and unstaged
// changes (paths relative to its root), and the session's checkpoints.
func (h *Repo) Status() Status {
	s, r := h.s, h.r
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Status: r.area.Status()}
	for _, c := range s.pushes.RejectedLocked(r.name, st.Staged) {
		st.Rejected = append(st.Rejected, c.ID)
	}
	st.Checkpoints, st.Latest = s.ws.LatestCheckpoint()
	if r.base != nil {
		st.From, st.Branch = r.base.ID(), targets.BranchName(r.baseRef)
	}
	return st
}

// Stage makes a commit of the repository's unstaged changes at or under
// paths (relative to its root; none: all of them).
func (h *Repo) Stage(paths []string, message string) (*staging.Commit, error) {
	rep, err := h.StageReport(paths, message)
	return rep.Commit, err
}

// StageReport is Stage, saying also which ignored files it took because a
// path named them and which it left out (paths relative to the root).
func (h *Repo) StageReport(paths []string, message string) (staging.StageReport, error) {
	s, r := h.s, h.r
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, err := r.area.StageReport(paths, message)
	if errors.Is(err, memfs.ErrQuotaExceeded) {
		// Objects no root reaches may be all that stands in the way.
		if s.collectLocked().Objects > 0 {
			rep, err = r.area.StageReport(paths, message)
		}
	}
	return rep, r.wrap(err)
}

// Amend replaces the latest staged commit in place with its changes and
// the unstaged ones at or under paths (none: all of them), with message
// (empty: its own), as git commit --amend does (staging.Area.Amend). A
// push waiting for review of that commit is withdrawn first; one already
// on its way to the target makes Amend refuse, changing nothing.
func (h *Repo) Amend(paths []string, message string) (staging.StageReport, []string, error) {
	s, r := h.s, h.r
	s.mu.Lock()
	defer s.mu.Unlock()
	commits := r.area.Commits()
	if len(commits) == 0 {
		_, err := r.area.Amend(paths, message)
		return staging.StageReport{}, nil, r.wrap(err)
	}
	// Bad input changes nothing: a message the amend would refuse must
	// not cost the waiting push its review first.
	if strings.TrimSpace(message) != "" {
		if _, err := commitmeta.CleanMessage(message); err != nil {
			return staging.StageReport{}, nil, r.wrap(err)
		}
	}
	withdrawn, err := s.pushes.UnpinLocked(commits[len(commits)-1:], "the worker replaced the commit it asked to push (git_stage amend)")
	if err != nil {
		return staging.StageReport{}, nil, r.wrap(err)
	}
	rep, err := r.area.Amend(paths, message)
	if errors.Is(err, memfs.ErrQuotaExceeded) && s.collectLocked().Objects > 0 {
		rep, err = r.area.Amend(paths, message)
	}
	return rep, withdrawn, r.wrap(err)
}

// Lookup returns the staged commit id names (or abbreviates).
func (h *Repo) Lookup(id string) (*staging.Commit, error) {
	c, err := h.r.area.Lookup(id)
	return c, h.r.wrap(err)
}

// Diff returns a staged commit's changes (id non-empty) or the unstaged
// ones.
func (h *Repo) Diff(id string) (*staging.Patch, *staging.Commit, error) {
	s, r := h.s, h.r
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		p, err := r.area.DiffUnstaged()
		return p, nil, r.wrap(err)
	}
	c, err := r.area.Lookup(id)
	if err != nil {
		return nil, nil, r.wrap(err)
	}
	p, err := r.area.DiffCommit(c.ID)
	return p, c, r.wrap(err)
}

// Discarded is what Discard did.
type Discarded struct {
	staging.Discarded
	Commit *staging.Commit // nil for all, and for the rejected ones
	Count  int             // how many staged commits were dropped
	// Rejected lists, for a discard of the rejected commits (no id), the
	// commits dropped, latest first.
	Rejected []*staging.Commit
	// Withdrawn lists the push requests withdrawn first, because they
	// asked to push commits the discard changes.
	Withdrawn []string
}

// Discard drops the staged commit id (all: every staged commit; neither:
// every staged commit that carries a change the reviewer rejected). A
// push waiting for review whose commits the discard would change is
// withdrawn first; one already on its way to the target makes Discard
// refuse.
func (h *Repo) Discard(id string, all bool) (Discarded, error) {
	s, r := h.s, h.r
	s.mu.Lock()
	defer s.mu.Unlock()
	if !all && strings.TrimSpace(id) == "" {
		res, err := s.discardRejectedLocked(r)
		return res, r.wrap(err)
	}
	res, err := s.discardLocked(r, id, all)
	return res, r.wrap(err)
}

// ErrNoneRejected: a discard of the rejected commits found none staged.
var ErrNoneRejected = errors.New("no staged commit carries a change the reviewer rejected")

// discardRejectedLocked drops every staged commit of r that carries a
// change the reviewer rejected, latest first, so that none of them lands
// under a later commit. One that cannot be dropped (a later commit needs
// it) stops it there; the error says which, and what was dropped stays
// dropped.
func (s *Session) discardRejectedLocked(r *repo) (Discarded, error) {
	rejected := s.pushes.RejectedLocked(r.name, r.area.Commits())
	if len(rejected) == 0 {
		return Discarded{}, fmt.Errorf("%w: give commit_id (see git_status) to drop one, or all: true to drop every staged commit", ErrNoneRejected)
	}
	commits := r.area.Commits()
	from := slices.IndexFunc(commits, func(c *staging.Commit) bool { return c.ID == rejected[len(rejected)-1].ID })
	withdrawn, err := s.pushes.UnpinLocked(commits[from:], "the worker discarded the commits the reviewer rejected")
	if err != nil {
		return Discarded{}, err
	}
	res := Discarded{Withdrawn: withdrawn, Rejected: rejected, Discarded: staging.Discarded{Rebuilt: map[plumbing.Hash]plumbing.Hash{}}}
	for _, c := range rejected {
		d, err := r.area.Discard(c.ID)
		if err != nil {
			return res, err
		}
		res.Count++
		res.Unstaged = append(res.Unstaged, d.Unstaged...)
		res.StillStaged = append(res.StillStaged, d.StillStaged...)
		for old, nu := range d.Rebuilt {
			res.Rebuilt[old] = nu
		}
	}
	s.collectLocked()
	return res, nil
}

func (s *Session) discardLocked(r *repo, id string, all bool) (Discarded, error) {
	commits := r.area.Commits()
	from := 0 // the discard changes commits[from:]
	var c *staging.Commit
	if !all {
		var err error
		if c, err = r.area.Lookup(id); err != nil {
			return Discarded{}, err
		}
		for i, sc := range commits {
			if sc.ID == c.ID {
				from = i
			}
		}
	}
	withdrawn, err := s.pushes.UnpinLocked(commits[from:], "the worker discarded the commit it asked to push")
	if err != nil {
		return Discarded{}, err
	}
	res := Discarded{Commit: c, Withdrawn: withdrawn}
	if all {
		res.Count = len(commits)
		r.area.DiscardAll()
	} else {
		d, err := r.area.Discard(c.ID)
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
// came from, or the default target), as git_pull describes. Paths and
// dest are relative to the repository's root; the paths in the result are
// workspace paths.
func (h *Repo) Pull(ctx context.Context, source string, paths []string, dest string) (PullResult, error) {
	res, err := h.pull(ctx, source, paths, dest)
	// The worker names files by their workspace paths.
	for i, p := range res.Updated {
		res.Updated[i] = h.r.path(p)
	}
	for i, p := range res.More {
		res.More[i] = h.r.path(p)
	}
	for i := range res.Refused {
		res.Refused[i].Path = h.r.path(res.Refused[i].Path)
	}
	return res, h.r.wrap(err)
}

func (h *Repo) pull(ctx context.Context, source string, paths []string, dest string) (PullResult, error) {
	s, r := h.s, h.r
	spec, err := r.resolveSpec(source)
	if err != nil {
		return PullResult{}, err
	}
	for _, p := range paths {
		if q := strings.TrimSuffix(p, "/"); q != "." && q != "" {
			if _, err := pathguard.CheckPath(q); err != nil {
				return PullResult{}, err
			}
		}
	}
	if dest != "" {
		if _, err := pathguard.CheckPath(strings.TrimSuffix(dest, "/")); err != nil {
			return PullResult{}, err
		}
	}
	// The target is opened before Session.mu is taken (see openMu); the
	// base it depends on is read under the lock, and read again after.
	var o opened
	named := spec
	for {
		s.mu.Lock()
		base := r.base
		s.mu.Unlock()
		spec = named
		if strings.TrimSpace(source) == "" && base != nil {
			// No source: update from where the sandbox's base came from
			// (the branch it forked from, until its first push lands
			// elsewhere).
			spec = base
		}
		if o, err = s.open(ctx, spec); err != nil {
			return PullResult{}, err
		}
		s.mu.Lock()
		if r.base == base {
			break
		}
		s.mu.Unlock() // another pull moved the base meanwhile
	}
	defer s.mu.Unlock()
	defer s.collectLocked()
	base := r.base
	sameBase := base != nil && base.ID() == spec.ID() && base.Branch == spec.Branch
	switch {
	case dest != "" || (base != nil && !sameBase):
		res, err := s.importFiles(ctx, r, o, paths, dest)
		if err != nil {
			return PullResult{}, err
		}
		return PullResult{Kind: Copied, From: spec.ID(), Head: res.Head, Files: res.Files, Updated: res.Updated, Refused: res.Refused}, nil
	case base == nil && len(r.area.Commits()) == 0 && r.area.Status().Clean():
		res, err := s.seed(ctx, r, o, spec, paths)
		if err != nil {
			return PullResult{}, err
		}
		return PullResult{Kind: Seeded, From: spec.ID(), Head: res.Head, Files: res.Files, Refused: res.Refused}, nil
	}
	return s.syncBaseLocked(ctx, r, o, spec, paths)
}

// syncBaseLocked brings the sandbox up to the target's latest commit
// (rebasing staged work onto it) and brings in paths not pulled before; o
// is spec's target, opened.
func (s *Session) syncBaseLocked(ctx context.Context, r *repo, o opened, spec *worker.TargetSpec, paths []string) (PullResult, error) {
	t, ref := o.t, o.ref
	fetchPaths := append(r.area.Pulled(), paths...)
	if r.area.Pulled() == nil {
		fetchPaths = nil
	}
	head, err := t.Fetch(ctx, ref, fetchPaths, s.store)
	if err != nil {
		return PullResult{}, err
	}
	res := PullResult{Kind: Current, From: spec.ID(), Head: head}
	if head != r.area.Base() {
		withdrawn, err := s.pushes.UnpinLocked(r.area.Commits(), "the worker pulled, which rebuilt the commit on the target's new head")
		if err != nil {
			return PullResult{}, err
		}
		res.Withdrawn = withdrawn
		rb, err := r.area.Rebase(head)
		if err != nil {
			return res, err
		}
		res.Kind, res.Updated, res.Rebuilt, res.Refused = Updated, rb.Updated, rb.Rebuilt, rb.Refused
	}
	if len(paths) > 0 {
		got, refused, err := r.area.PullPaths(paths)
		if err != nil {
			return res, err
		}
		res.More = got
		res.Refused = append(res.Refused, refused...)
	}
	r.base, r.baseRef = spec, ref
	return res, nil
}
