package push

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/textcap"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/staging"
)

// Seen is what the reviewer last decided on of the pushes from a
// repository to a target's branch, when they sent it back (a rejection)
// or commented: the next request for the same push shows them what
// changed since (approval.Since).
type Seen struct {
	Repo    string   `json:"repo,omitempty"`
	Target  string   `json:"target"` // the target's id
	Ref     string   `json:"ref"`
	Request string   `json:"request"`
	Why     string   `json:"why"`
	Tree    string   `json:"tree"`            // what that request would have pushed
	Paths   []string `json:"paths,omitempty"` // the files it changed
	Reason  string   `json:"reason,omitempty"`
	// Comments are the reviewer's; Reply, the worker's answer, once it
	// pushes again.
	Comments []approval.Comment `json:"comments,omitempty"`
	Reply    string             `json:"reply,omitempty"`
	// Commits are the worker's commits it carried, and Rejected says the
	// reviewer rejected them: each that is pushed again unchanged is
	// shown as such, and git_discard without a commit id drops them.
	Commits  []SeenCommit `json:"commits,omitempty"`
	Rejected bool         `json:"rejected,omitempty"`
}

type seenKey struct{ repo, target, ref string }

func (s *Seen) key() seenKey { return seenKey{s.Repo, s.Target, s.Ref} }

// SeenLocked is what the reviewer saw last, per repository, target and
// branch, for the session's record.
func (b *Book) SeenLocked() []Seen {
	keys := slices.SortedFunc(maps.Keys(b.seen), func(x, y seenKey) int {
		if x.repo != y.repo {
			return strings.Compare(x.repo, y.repo)
		}
		if x.target != y.target {
			return strings.Compare(x.target, y.target)
		}
		return strings.Compare(x.ref, y.ref)
	})
	var out []Seen
	for _, k := range keys {
		out = append(out, *b.seen[k])
	}
	return out
}

// RestoreSeenLocked installs what a saved session's reviewer saw last.
func (b *Book) RestoreSeenLocked(seen []Seen) {
	for _, s := range seen {
		b.seen[s.key()] = &s
	}
}

// sawLocked records the reviewer's decision on p's request: one that sent
// it back or commented is what the next push of the same repository to
// the same branch is compared with; a clean approval that landed leaves
// nothing to compare with.
func (b *Book) sawLocked(p *push, dec approval.Decision) {
	k := seenKey{p.r.Name(), p.t.ID(), p.ref}
	if dec.Verdict != approval.Reject && len(dec.Comments) == 0 {
		delete(b.seen, k)
		return
	}
	why := "you rejected it"
	switch {
	case dec.Verdict == approval.Reject && len(dec.Comments) > 0:
		why = "you asked for changes"
	case dec.Verdict != approval.Reject:
		why = "you approved it with comments"
	}
	s := &Seen{Repo: k.repo, Target: k.target, Ref: k.ref, Request: p.req.ID, Why: why, Tree: p.req.Tree.String(),
		Reason: dec.Reason, Comments: dec.Comments, Commits: seenCommitsLocked(p), Rejected: dec.Verdict == approval.Reject}
	s.Paths = changedPaths(p.req.Files)
	b.seen[k] = s
}

// sinceLocked says, on req (the request about to be asked for p), what
// the reviewer saw before: p's own earlier request when the target moved
// under it (prev), else the last decision on a push of the same
// repository to the same branch, if the reviewer sent it back or
// commented.
func (b *Book) sinceLocked(p *push, prev *approval.Request, req *approval.Request) {
	var s *Seen
	if prev != nil {
		s = &Seen{Request: prev.ID, Why: "the target moved", Tree: prev.Tree.String()}
		s.Paths = changedPaths(prev.Files)
	} else if s = b.seen[seenKey{p.r.Name(), p.t.ID(), p.ref}]; s == nil {
		return
	} else if b.reply != nil && b.reply.repo == p.r.Name() && b.reply.text != "" {
		// Kept with what was seen: a request offered again after a
		// restart still carries it.
		s.Reply = b.reply.text
	}
	tree, err := record.HashOf(s.Tree)
	if err != nil {
		return
	}
	req.Since = &approval.Since{Request: s.Request, Why: s.Why, Tree: tree, Reason: s.Reason,
		Comments: s.Comments, Reply: s.Reply, Interdiff: b.interdiff(tree, req, s.Paths)}
	// What the reviewer last decided on this branch says what each commit
	// is to them, also when this request follows one the target moved
	// under: a rejected commit is flagged whatever asked again.
	if seen := b.seen[seenKey{p.r.Name(), p.t.ID(), p.ref}]; seen != nil {
		b.sinceCommitsLocked(p, seen, req)
	}
}

// interdiff is the unified diff from tree (what the reviewer saw) to
// req's tree, over only the files either push changes: what moved on the
// target elsewhere in between is not the worker's, and adds nothing. It
// is capped as a request's diff is.
func (b *Book) interdiff(tree plumbing.Hash, req *approval.Request, seenPaths []string) string {
	paths := map[string]bool{}
	for _, p := range seenPaths {
		paths[p] = true
	}
	for _, p := range changedPaths(req.Files) {
		paths[p] = true
	}
	diff := textcap.New(maxRequestDiff)
	var buf bytes.Buffer
	// The other files' contents are never read: a branch that moved a
	// great deal costs its trees' walk, not a fetch of its lazy files.
	err := b.cfg.Store.EachFilePatchRenamedOf(tree, req.Tree, func(p string) bool { return paths[p] }, func(f *staging.FilePatch) error {
		return f.Format(diff, &buf, false)
	})
	if err != nil {
		return "(the difference could not be made: " + err.Error() + "; the full diff is below)"
	}
	return diff.Text("the rest is too large to show here")
}

// changedPaths is the paths files change: each file's, and a rename's
// old path too, which it takes away.
func changedPaths(files []approval.FileChange) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
		if f.Op == change.Rename {
			out = append(out, f.From)
		}
	}
	return out
}

// SeenTreesLocked is the trees the next requests are compared with: the
// store keeps them.
func (b *Book) SeenTreesLocked() []plumbing.Hash {
	var out []plumbing.Hash
	for _, s := range b.seen {
		if h, err := record.HashOf(s.Tree); err == nil {
			out = append(out, h)
		}
	}
	return out
}

// pendingReply is the worker's reply to the comments on its last push
// from repo, while its push call makes a request.
type pendingReply struct{ repo, text string }
