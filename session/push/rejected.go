package push

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/textcap"
	"github.com/airlock-dev/airlock/session/record"
	"github.com/airlock-dev/airlock/staging"
)

// maxRejectedDiff bounds the own diff of a rejected commit a re-review
// carries (the full diff is the request's).
const maxRejectedDiff = 256 << 10

// SeenCommit is one of the worker's commits a request the reviewer
// decided on carried: by id, and by its own change (Key), which a rebase
// keeps while it changes the id.
type SeenCommit struct {
	ID      string `json:"id"`
	Key     string `json:"key,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// changeKey names a staged commit's own change: each path it changes,
// how, and to what. Two commits with one key land the same content.
func changeKey(c *staging.Commit) string {
	files := slices.Clone(c.Files)
	slices.SortFunc(files, func(a, b staging.File) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%o\n", f.Path, f.Op, f.Blob, f.Mode)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// seenCommitsLocked records the worker's commits p's request carried.
func seenCommitsLocked(p *push) []SeenCommit {
	var out []SeenCommit
	for _, ci := range p.req.Commits {
		sc := SeenCommit{ID: ci.ID.String(), Subject: firstLine(ci.Message)}
		if c, err := p.r.Area().Lookup(ci.ID.String()); err == nil {
			sc.Key = changeKey(c)
		}
		out = append(out, sc)
	}
	return out
}

// RejectedLocked returns the staged commits of repo (staged: its area's)
// that carry a change the reviewer rejected, latest first: what
// git_discard without a commit id drops.
func (b *Book) RejectedLocked(repo string, staged []*staging.Commit) []*staging.Commit {
	keys := map[string]bool{}
	for _, s := range b.seen {
		if s.Repo != repo || !s.Rejected {
			continue
		}
		for _, sc := range s.Commits {
			if sc.Key != "" {
				keys[sc.Key] = true
			}
		}
	}
	var out []*staging.Commit
	for i := len(staged) - 1; i >= 0; i-- {
		if keys[changeKey(staged[i])] {
			out = append(out, staged[i])
		}
	}
	return out
}

// rejectedAdvice tells a worker whose push was rejected what to do with
// the commits it carried, which stay staged: one staged on top of them
// would carry them to the target, their content in its history.
func rejectedAdvice(p *push) string {
	commits := p.req.Commits
	if len(commits) == 0 {
		return ""
	}
	var names []string
	for _, c := range commits {
		names = append(names, fmt.Sprintf("%s %q", shortid.Hash(c.ID), firstLine(c.Message)))
	}
	latest := shortid.Hash(commits[len(commits)-1].ID)
	it, them, others := "commit stays", "it", ""
	if len(commits) > 1 {
		// amend replaces one commit: the others would be pushed again
		// as they were, and shown again as rejected.
		it, them = "commits stay", "them"
		others = fmt.Sprintf(" (amend replaces only the latest, %s: drop the others first, or they are shown again as rejected)", latest)
	}
	return fmt.Sprintf("The rejected %s staged: %s. A commit staged on top would carry %s to the target, "+
		"so its content would stay in the target's history. Drop a rejected commit with git_discard commit_id=%s "+
		"(its changes become unstaged, your files stay; git_discard with no commit_id drops every rejected commit), "+
		"or fix the files and replace the latest in place with git_stage amend: true%s; then git_push again. "+
		"The reviewer is shown which commits are new, which replace rejected ones, and any rejected commit still in the push.",
		it, strings.Join(names, ", "), them, latest, others)
}

// sinceCommitsLocked says, on req's Since (s: what the reviewer saw),
// what each of req's commits is to the reviewer: new, one they rejected
// (flagged, with its own diff: later commits may hide it, but it lands),
// the replacement of one, or one they saw.
func (b *Book) sinceCommitsLocked(p *push, s *Seen, req *approval.Request) {
	if len(s.Commits) == 0 {
		return
	}
	staged := map[plumbing.Hash]*staging.Commit{}
	for _, c := range p.r.Area().Commits() {
		staged[c.ID] = c
	}
	byKey, byID := map[string]SeenCommit{}, map[plumbing.Hash]bool{}
	for _, sc := range s.Commits {
		if sc.Key != "" {
			byKey[sc.Key] = sc
		}
		if h, err := record.HashOf(sc.ID); err == nil {
			byID[h] = true
		}
	}
	for _, ci := range req.Commits {
		st := approval.SinceCommit{ID: ci.ID, Status: approval.CommitNew}
		c := staged[ci.ID]
		var key string
		if c != nil {
			key = changeKey(c)
		}
		sc, same := byKey[key]
		switch {
		case same && s.Rejected:
			was, _ := record.HashOf(sc.ID)
			st.Status, st.Was, st.Diff = approval.CommitRejected, was, b.ownDiff(c)
			req.Flags = append(req.Flags, approval.Flag{Code: approval.FlagRejectedAgain, Severity: approval.High, Commit: ci.ID.String(),
				Message: fmt.Sprintf("commit %s is one you rejected in request %s (as %s), unchanged: it lands as its own commit, its content in the target's history even where later commits change it; [d] shows its own change",
					shortid.Hash(ci.ID), s.Request, shortid.Hash(was))})
		case c != nil && slices.ContainsFunc(c.Replaces, func(h plumbing.Hash) bool { return byID[h] }):
			i := slices.IndexFunc(c.Replaces, func(h plumbing.Hash) bool { return byID[h] })
			st.Status, st.Was = approval.CommitReplaces, c.Replaces[i]
			if !s.Rejected {
				st.Status = approval.CommitNew
			}
		case same || byID[ci.ID]:
			st.Status = approval.CommitSeen
		}
		req.Since.Commits = append(req.Since.Commits, st)
	}
	approval.SortFlags(req.Flags)
}

// ownDiff is c's own change, against its parent, as a unified diff.
func (b *Book) ownDiff(c *staging.Commit) string {
	var parent plumbing.Hash
	if !c.Parent.IsZero() {
		pc, err := object.GetCommit(b.cfg.Store, c.Parent)
		if err != nil {
			return "(its change could not be read: " + err.Error() + ")"
		}
		parent = pc.TreeHash
	}
	diff := textcap.New(maxRejectedDiff)
	var buf bytes.Buffer
	if err := b.cfg.Store.EachFilePatchRenamed(parent, c.Tree, func(f *staging.FilePatch) error { return f.Format(diff, &buf, false) }); err != nil {
		return "(its change could not be read: " + err.Error() + ")"
	}
	return diff.Text("the rest is too large to show here")
}
