package session

import (
	"context"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/session/push"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

// PushResult is how a push ended, or that it is still waiting.
type PushResult = push.Result

// Push asks for commitID (the latest staged commit when empty) to be pushed
// to the target named target and waits for the outcome, at most the
// session's Timeout: then the result is Pending, the push goes on, and
// calling Push again with the same commit waits on it. A push already in
// flight for the same commit, target and branch is joined, never asked
// twice. When ctx ends while nobody else waits, a request still waiting
// for review is withdrawn.
func (h *Repo) Push(ctx context.Context, commitID, target string, progress Progress) (PushResult, error) {
	return h.PushReply(ctx, commitID, target, "", progress)
}

// newPushes is the session's book of pushes, which asks the session what
// pushHost answers.
func (s *Session) newPushes() *push.Book {
	return push.NewBook(push.Config{Mu: &s.mu, Gate: s.gate, Store: s.store, Worker: s.w.Name, Session: s.id,
		Timeout: s.opts.Timeout, Retries: s.opts.Retries, Rules: s.rules()}, pushHost{s})
}

// rules are the push risk rules: the operator's (Options.Rules, serve
// --protect) with the worker file's protect list added.
func (s *Session) rules() approval.Rules {
	r := s.opts.Rules
	r.Protected = append(append([]string(nil), r.Protected...), s.w.Protect...)
	return r
}

// pushHost is the session as a push sees it (push.Host), under Session.mu.
type pushHost struct{ s *Session }

func (h pushHost) SaveLocked() error            { return h.s.saveLocked() }
func (h pushHost) SaveOrWarnLocked(what string) { h.s.saveOrWarnLocked(what) }
func (h pushHost) Warn(format string, args ...any) {
	h.s.warn(format, args...)
}
func (h pushHost) RecordLedgerHead(ctx context.Context, t targets.Target) error {
	return h.s.recordLedgerHead(ctx, t)
}
func (h pushHost) CollectLocked() { h.s.collectLocked() }
func (h pushHost) Repo(name string) push.Repo {
	if r := h.s.repoNamed(name); r != nil {
		return r
	}
	return nil // not a typed nil: the push asks r == nil
}

// The repository as a push sees it (push.Repo).
func (r *repo) Name() string        { return r.name }
func (r *repo) Area() *staging.Area { return r.area }

// BaseFrom reports whether r's base was pulled from spec's target, which
// therefore holds it.
func (r *repo) BaseFrom(spec *worker.TargetSpec) bool {
	return r.base != nil && r.base.ID() == spec.ID()
}

// BaseRef is the ref r's base came from.
func (r *repo) BaseRef() string { return r.baseRef }

// SetBase records that r's base is ref of spec's target.
func (r *repo) SetBase(spec *worker.TargetSpec, ref string) { r.base, r.baseRef = spec, ref }
