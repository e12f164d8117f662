package session

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/session/push"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

// OpenTarget opens the target a spec names, as its kind opens one, where
// the operator's environment says (targets.Environ).
func OpenTarget(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error) {
	return targets.Open(ctx, spec.Type, spec.Where(), targets.Environ())
}

// target opens (once) the target of spec. Never with Session.mu held (see
// Session.openMu).
func (s *Session) target(ctx context.Context, spec *worker.TargetSpec) (targets.Target, error) {
	key := spec.ID()
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if t, ok := s.opened[key]; ok {
		return t, nil
	}
	t, err := s.opts.OpenTarget(ctx, spec)
	if err != nil {
		return nil, err
	}
	s.opened[key] = t
	return t, nil
}

// targetRef opens spec's target and names the full ref it pushes to and
// pulls from: its branch, or the target's default branch (which GitHub is
// asked for). Never with Session.mu held.
func (s *Session) targetRef(ctx context.Context, spec *worker.TargetSpec) (targets.Target, string, error) {
	t, err := s.target(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	branch := spec.Branch
	if branch == "" {
		if db, ok := t.(targets.DefaultBrancher); ok {
			if b, err := db.DefaultBranch(ctx); err == nil && b != "" {
				branch = b
			}
		}
	}
	if branch == "" {
		branch = "main"
	}
	ref, err := targets.BranchRef(branch)
	return t, ref, err
}

// opened is a target opened for a spec, and the full ref the spec names
// on it (targetRef): what a call opens before it takes Session.mu.
type opened struct {
	t   targets.Target
	ref string
}

// open is targetRef, as an opened.
func (s *Session) open(ctx context.Context, spec *worker.TargetSpec) (opened, error) {
	t, ref, err := s.targetRef(ctx, spec)
	return opened{t, ref}, err
}

// preopened are the targets opened before Session.mu is taken,
// by id, with the error of each that could not be opened: a resume's
// pushes, which it takes up under the lock.
type preopened map[string]preopen

type preopen struct {
	t   targets.Target
	err error
}

// preopenPushes opens the targets of the pushes a resume takes up (those
// of a repository the session has).
func (s *Session) preopenPushes(ctx context.Context, recs []push.Rec) preopened {
	p := preopened{}
	for _, pr := range recs {
		spec := pr.Spec
		if spec == nil || s.repoNamed(pr.Repo) == nil {
			continue
		}
		if _, done := p[spec.ID()]; !done {
			t, err := s.target(ctx, spec)
			p[spec.ID()] = preopen{t, err}
		}
	}
	return p
}

// target returns spec's target as preopen found it.
func (p preopened) target(spec *worker.TargetSpec) (targets.Target, error) {
	o, ok := p[spec.ID()]
	if !ok {
		return nil, fmt.Errorf("target %s was not opened", spec.ID())
	}
	return o.t, o.err
}
