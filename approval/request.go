package approval

import (
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
	Files         []FileChange  `json:"files"`
	Added         int           `json:"added"`
	Deleted       int           `json:"deleted"`
	Diff          string        `json:"diff"` // the full unified diff, plain
	// DiffTruncated says Diff was cut short: the reviewer cannot see the
	// whole push, so it cannot be approved whole, only picked from.
	DiffTruncated bool   `json:"diff_truncated,omitempty"`
	Flags         []Flag `json:"flags"`
	// Pickable says whether the reviewer may choose some files only.
	Pickable bool `json:"pickable"`
}

// The kinds of requests.
const (
	KindPush    = ""
	KindNetwork = "network"
)

// The scopes a network approval may have.
const (
	ScopeOnce    = ""        // this run only
	ScopeCommand = "command" // this command line, for the rest of the session
	ScopeSession = "session" // every run, for the rest of the session
)

// CommitInfo is one commit of a push.
type CommitInfo struct {
	ID      plumbing.Hash `json:"id"`
	Message string        `json:"message"`
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
	Paths   []string `json:"paths,omitempty"`  // for Pick
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
