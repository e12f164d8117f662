package session

import (
	"context"
	"strings"

	"github.com/airlock-dev/airlock/session/push"
)

// PushReply is Push with the worker's reply to the reviewer's comments on
// its last push from this repository: a push that asks anew answers them,
// and the reviewer reads reply with the new request (Request.Since).
func (h *Repo) PushReply(ctx context.Context, commitID, target, reply string, progress Progress) (PushResult, error) {
	spec, err := h.r.resolveSpec(target)
	if err != nil {
		return PushResult{}, h.r.wrap(err)
	}
	t, err := h.s.target(ctx, spec)
	if err != nil {
		return PushResult{}, h.r.wrap(err)
	}
	res, err := h.s.pushes.PushReply(ctx, h.r, spec, t, commitID, strings.TrimSpace(reply), progress)
	return res, h.r.wrap(err)
}

// OpenCommentsText is the reviewer's comments the worker has not answered
// yet, as it reads them in its instructions and in git_status ("" when
// there are none). They stay until the worker pushes again from the
// repository, and survive a restart (the session's record keeps them).
func (s *Session) OpenCommentsText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return push.OpenText(s.pushes.OpenLocked())
}
