package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Request is everything a reviewer needs about one push, or about one
// command's asking for the network (Kind KindNetwork). It is plain data: it
// travels to a reviewer in another process as JSON, full diff included.
type Request struct {
	ID     string    `json:"id"`     // assigned by the Gate
	Time   time.Time `json:"time"`   // when it was submitted
	Worker string    `json:"worker"` // who asks
	// Session is the sandbox that asks (a server may hold several), and
	// Repo the repository of a multi-repository session the push is
	// from ("" for a session of one repository).
	Session string `json:"session,omitempty"`
	Repo    string `json:"repo,omitempty"`
	// Kind is KindPush ("", the default) or KindNetwork.
	Kind string `json:"kind,omitempty"`
	// Command, Dir and Reason describe a network request: the command
	// line, its workspace directory, and why the worker says it needs the
	// network.
	Command string `json:"command,omitempty"`
	Dir     string `json:"dir,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Reach is what a run with the network reaches besides the internet:
	// the operator's allowed host:port pairs (serve --run-allow-host), as
	// the reviewer is shown them.
	Reach []string `json:"reach,omitempty"`
	// Target identifies the target ("local:/path", "github:owner/repo");
	// a Grant names it, and auto-approval matches it.
	Target string `json:"target"`
	// Describe is the target in words, for the prompt.
	Describe string `json:"describe"`
	// Ref is the branch or ref pushed to.
	Ref string `json:"ref"`
	// DefaultBranch is the target's default branch, protected by default.
	DefaultBranch string        `json:"default_branch,omitempty"`
	NewRef        bool          `json:"new_ref"`
	Old           plumbing.Hash `json:"old"`  // the target's current commit; zero for a new ref
	New           plumbing.Hash `json:"new"`  // the commit to push
	Tree          plumbing.Hash `json:"tree"` // the tree of New
	Commits       []CommitInfo  `json:"commits"`
	// BaseCommits are, for a push into an empty target or onto a base the
	// target lacks, the commits of the sandbox's base (and its history,
	// as far as the sandbox holds it) that land under Commits, oldest
	// first: not the worker's, but they land, so they are shown.
	BaseCommits []CommitInfo `json:"base_commits,omitempty"`
	Files       []FileChange `json:"files"`
	Added       int          `json:"added"`
	Deleted     int          `json:"deleted"`
	Diff        string       `json:"diff"` // the full unified diff, plain
	// DiffTruncated says Diff was cut short: the reviewer cannot see the
	// whole push, so it cannot be approved whole, only picked from.
	DiffTruncated bool   `json:"diff_truncated,omitempty"`
	Flags         []Flag `json:"flags"`
	// Pickable says whether the reviewer may choose some files only.
	Pickable bool `json:"pickable"`
	// Fork is, for a new branch, the commit it forks from (the Diff is
	// against it), and ForkRef the branch that commit is on, if known.
	Fork    plumbing.Hash `json:"fork,omitempty"`
	ForkRef string        `json:"fork_ref,omitempty"`
	// RefRole is what Ref is to the target, as the target says it
	// (BranchCheckedOut, BranchDefault, BranchProtected, BranchMaybeDefault; "" for any other
	// branch): where a push's branch risk comes from, never its name.
	RefRole string `json:"ref_role,omitempty"`
	// Since is set when the reviewer has seen an earlier request for this
	// push: what they saw, said, and what changed since.
	Since *Since `json:"since,omitempty"`
}

// The kinds of requests.
const (
	KindPush    = ""
	KindNetwork = "network"
)

// The scopes a network approval may have.
const (
	ScopeOnce    = ""        // this run only
	ScopeCommand = "command" // this command line in this directory reaching this, for the rest of the session
	ScopeSession = "session" // every run, for the rest of the session
)

// CommitInfo is one commit of a push.
type CommitInfo struct {
	ID      plumbing.Hash `json:"id"`
	Message string        `json:"message"`
	// Files is the commit's own change against its parent, file by file,
	// which the reviewer accepts hunk by hunk (set when Pickable).
	Files []FileDiff `json:"files,omitempty"`
}

// FileChange is one path a push changes, with its final state.
type FileChange struct {
	Path    string            `json:"path"`
	Op      change.Kind       `json:"op"`
	Size    int64             `json:"size"`     // new size; for a deletion, the old one
	OldMode filemode.FileMode `json:"old_mode"` // zero for a creation
	NewMode filemode.FileMode `json:"new_mode"` // zero for a deletion
	Binary  bool              `json:"binary"`
	Added   int               `json:"added"`
	Deleted int               `json:"deleted"`
	// Unavailable says why a side of the file's content could not be
	// read for the diff (it is not in Diff).
	Unavailable string `json:"unavailable,omitempty"`
	// FromBase says the file lands as the base has it (BaseCommits): the
	// worker's commits do not change it.
	FromBase bool `json:"from_base,omitempty"`
	// From is, for Op change.Rename or change.Copy (as git diff -M -C
	// finds them), the path the file is made from: Added and Deleted
	// count its edits against that file, and a rename is one file, not a
	// deletion and a creation. Similarity is git's similarity index.
	From       string `json:"from,omitempty"`
	Similarity int    `json:"similarity,omitempty"`
	// CopyOf is, for binary content, a path of the target's tree that
	// holds the same bytes (the same blob): nothing new lands.
	CopyOf string `json:"copy_of,omitempty"`
}

// Verdict is a decision's outcome.
type Verdict string

const (
	Approve Verdict = "approve"
	Reject  Verdict = "reject"
	// Pick approves a commit of only some files; the push then carries a
	// new commit, made of just those.
	Pick Verdict = "pick"
)

// Decision answers a Request.
type Decision struct {
	Request string   `json:"request"`
	Verdict Verdict  `json:"verdict"`
	Reason  string   `json:"reason,omitempty"` // told to the worker on rejection
	Paths   []string `json:"paths,omitempty"`  // for Pick by file
	// Accept is, for Pick, what of each commit was accepted, hunk by hunk
	// (instead of Paths). Commits are what was made of it, in order;
	// New is the last of them.
	Accept  []Accepted      `json:"accept,omitempty"`
	Commits []plumbing.Hash `json:"commits,omitempty"`
	// Comments are the reviewer's for the worker, with any verdict; with a
	// rejection they are the changes asked for.
	Comments []Comment `json:"comments,omitempty"`
	// Scope is how far a network approval reaches (ScopeOnce,
	// ScopeCommand, ScopeSession).
	Scope string `json:"scope,omitempty"`
	// By says who decided: "reviewer", "policy:never", "policy:auto",
	// "repeat-denied".
	By string `json:"by"`
	// New is the commit the decision lets through: the request's, or for
	// Pick the commit made of the picked files.
	New  plumbing.Hash `json:"new,omitempty"`
	Time time.Time     `json:"time"`
	// Key, Sig and Fingerprint are, for a reviewer's decision from
	// another process, the reviewer's public key, its signature and the
	// fingerprint of the request it signed over (SignedDecision): the
	// ledger keeps them, so the record can be verified again.
	Key         string `json:"key,omitempty"`
	Sig         string `json:"sig,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Undoable: the reviewer's screen offers to undo the decision (it is
	// signed); UndoUntil, set by the gate, is when its landing starts
	// unless it is undone (undo.go).
	Undoable  bool      `json:"undoable,omitempty"`
	UndoUntil time.Time `json:"undo_until,omitzero"`
}

// Approved reports whether the push may go ahead.
func (d Decision) Approved() bool { return d.Verdict == Approve || d.Verdict == Pick }

// ShortRef is a ref's branch name when it is a branch.
func ShortRef(ref string) string { return strings.TrimPrefix(ref, "refs/heads/") }

// Summary is the one line describing the request's commits.
func (r *Request) Summary() string {
	files := fmt.Sprintf("%d files", len(r.Files))
	if len(r.Files) == 1 {
		files = "1 file"
	}
	return fmt.Sprintf("%s, +%d -%d", files, r.Added, r.Deleted)
}

// BlobReader reads objects' contents: read-only access to the objects a
// push carries (the sandbox's store).
type BlobReader interface {
	ReadBlob(h plumbing.Hash) ([]byte, error)
}

// Contents is the Content of a push as data: the blob each path holds on
// either side (old: what the ref has, new: what the push brings), read
// from blobs. Assess reads the files through it, never through code of
// the caller's.
func Contents(blobs BlobReader, old, new map[string]plumbing.Hash) Content {
	return func(path string, newSide bool) ([]byte, bool) {
		h := old[path]
		if newSide {
			h = new[path]
		}
		if h.IsZero() {
			return nil, false
		}
		data, err := blobs.ReadBlob(h)
		return data, err == nil
	}
}

// FileDiff is one file of one commit's own change (against the commit's
// parent), as the reviewer picks from it: the file's header lines and its
// hunks, each as git prints it. A file with no hunks (binary, a mode or
// type change alone, an empty file) is accepted whole or not at all.
type FileDiff struct {
	Path string      `json:"path"`
	Op   change.Kind `json:"op"`
	// From is, for a rename or copy, the path it is made from: Hunks are
	// against that file, and accepting any of them renames (or copies)
	// it; a rename no selection names is left out whole, unrenamed.
	From   string   `json:"from,omitempty"`
	Header string   `json:"header"`          // "diff --git ..." up to the first hunk
	Hunks  []string `json:"hunks,omitempty"` // each from its "@@" line, with its lines
	Binary bool     `json:"binary,omitempty"`
}

// HunkID is a hunk's content id: what a selection and the ledger name it
// by, so that what is accepted is exactly the text that was shown.
func HunkID(hunk string) string {
	sum := sha256.Sum256([]byte(hunk))
	return hex.EncodeToString(sum[:12])
}

// Accepted is what a reviewer accepted of one of the worker's commits.
// A commit the decision does not name is left out whole.
type Accepted struct {
	Commit plumbing.Hash `json:"commit"` // the worker's commit, as in Request.Commits
	// Message, when not empty, is the reviewer's edit of the commit's
	// message; empty keeps the worker's.
	Message string         `json:"message,omitempty"`
	Files   []AcceptedFile `json:"files"`
}

// AcceptedFile is what was accepted of one file of a commit.
type AcceptedFile struct {
	Path string `json:"path"`
	// Whole accepts the file's change as it is: every hunk, its mode,
	// its creation or deletion. Otherwise Hunks says which.
	Whole bool           `json:"whole,omitempty"`
	Hunks []AcceptedHunk `json:"hunks,omitempty"`
}

// AcceptedHunk is one accepted hunk of a file's diff in a commit.
type AcceptedHunk struct {
	Index int    `json:"index"` // its place among the file's hunks, from 0
	ID    string `json:"id"`    // HunkID of its text as shown
	// Lines, when not nil, accepts only these of the hunk's changed
	// lines (the "+" and "-" lines, numbered from 0 in the hunk's order),
	// as git add -p's edit does: a "-" line left out stays, a "+" line
	// left out is not added.
	Lines []int `json:"lines,omitempty"`
}

// Comment is a reviewer's remark for the worker: on a line of a file
// (Line counted from 1, in the new side unless Side says "old": a line the
// push deletes), on lines Line to EndLine of that side, on a file (Line
// 0), or general (Path ""). The fields after Text are omitted when empty,
// so a comment without them signs and reads as before they existed.
type Comment struct {
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
	Text string `json:"text"`
	// Side is SideOld for a line of the file as it was (a deleted line);
	// "" (or SideNew) is the new side.
	Side string `json:"side,omitempty"`
	// EndLine, when above Line, makes the comment one on a range.
	EndLine int `json:"end_line,omitempty"`
	// Commit, when set, is the commit whose sides the lines count in: a
	// commit of the push other than the last to change the file.
	Commit string `json:"commit,omitempty"`
}

// The sides of a diff a comment's line may be on.
const (
	SideNew = "new"
	SideOld = "old"
)

// Since says a request follows one the reviewer has already seen: the
// worker pushed again after a rejection or comments, or the push is asked
// again because its target moved. The prompt says so and shows Interdiff,
// the difference from what the reviewer saw.
type Since struct {
	Request string        `json:"request"` // the request seen last
	Why     string        `json:"why"`     // in words: "you rejected it", "the target moved"
	Tree    plumbing.Hash `json:"tree"`    // what that request would have pushed
	// Reason and Comments are what the reviewer said then.
	Reason   string    `json:"reason,omitempty"`
	Comments []Comment `json:"comments,omitempty"`
	// Reply is the worker's answer to them, if it gave one.
	Reply string `json:"reply,omitempty"`
	// Interdiff is the unified diff from Tree to this request's tree, over
	// the files either push changes; "" when they push the same.
	Interdiff string `json:"interdiff"`
	// Commits says what each of this request's commits is to the
	// reviewer, in Request.Commits' order: new, one they rejected (its
	// content lands as its own commit), or the replacement of one.
	Commits []SinceCommit `json:"commits,omitempty"`
}

// How a commit of a request relates to the one the reviewer saw before.
const (
	CommitNew      = "new"      // not in what the reviewer saw
	CommitRejected = "rejected" // in what they rejected, unchanged
	CommitReplaces = "replaces" // an amend of a commit they rejected
	CommitSeen     = "seen"     // in what they saw and did not reject (approved with comments)
)

// SinceCommit is one commit of a re-review: what it is to the reviewer.
type SinceCommit struct {
	ID     plumbing.Hash `json:"id"`
	Status string        `json:"status"`
	// Was is, for CommitReplaces, the rejected commit it replaces; for
	// CommitRejected, the id the reviewer saw it under (a rebase changes
	// the id, not the change).
	Was plumbing.Hash `json:"was,omitempty"`
	// Diff is, for CommitRejected, the commit's own change as a unified
	// diff (capped): what lands of it, which later commits may hide.
	Diff string `json:"diff,omitempty"`
}
