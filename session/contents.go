package session

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/targets"
)

// Contents is what one repository of the workspace holds, for the worker's
// first look: where its base came from, which commit, how many files and
// where they are, and where pushes go.
type Contents struct {
	// Repo is the repository's name, also its directory in the workspace;
	// "" for a single-repository session's, which is the whole workspace.
	Repo string
	// From is the target the base was pulled from ("local:/repo") and
	// Branch its branch; both "" when nothing was pulled.
	From, Branch string
	Commit       plumbing.Hash // the base commit; zero when nothing was pulled
	Subject      string        // its message's first line
	Files        int           // files (and symlinks) of the base in the workspace
	// Paths are the paths of the base that were pulled; nil: all of it.
	Paths []string
	// PushTo is the default target as people read it, and PushBranch the
	// branch a push goes to ("" when the target's own default decides).
	PushTo, PushBranch string
	// Pulls says the worker pulls this repository at start (auto_pull):
	// with no Commit, the branch it pulls had none yet.
	Pulls            bool
	Unstaged, Staged int // changes not staged yet, and staged commits
}

// Contents describes each repository of the workspace as it is now.
func (s *Session) Contents() []Contents {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Contents
	for _, r := range s.repos {
		st := r.area.Status()
		c := Contents{Repo: r.name, Commit: r.area.Base(), Paths: r.area.Pulled(),
			PushTo: r.cfg.DefaultTarget.ID(), PushBranch: r.cfg.DefaultTarget.Branch,
			Pulls: len(r.cfg.AutoPull) > 0, Unstaged: len(st.Unstaged), Staged: len(st.Staged)}
		if r.base != nil {
			c.From, c.Branch = r.base.ID(), targets.BranchName(r.baseRef)
		}
		if !c.Commit.IsZero() {
			if commit, err := object.GetCommit(s.store, c.Commit); err == nil {
				c.Subject, _, _ = strings.Cut(commit.Message, "\n")
			}
			r.ws.Base().Walk(func(memfs.Entry) error { c.Files++; return nil })
		}
		out = append(out, c)
	}
	return out
}
