package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// Severity ranks a risk flag.
type Severity int

const (
	Low Severity = iota + 1
	Medium
	High
)

func (s Severity) String() string {
	switch s {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*s = Low
	case "medium":
		*s = Medium
	case "high":
		*s = High
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// Flag is one thing in a push a tired reviewer must not miss.
type Flag struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Path     string   `json:"path,omitempty"`
	// Commit names the commit a flag of a commit message is about.
	Commit  string `json:"commit,omitempty"`
	Message string `json:"message"`
}

// The flag codes.
const (
	FlagProtectedRef = "protected-ref"
	FlagNewRef       = "new-ref"
	FlagDeletions    = "deletions"
	FlagCI           = "ci-or-hooks"
	FlagBinary       = "binary"
	FlagLarge        = "large-file"
	FlagExecutable   = "executable"
	FlagSymlink      = "symlink"
	FlagSecret       = "secret"
	// FlagDropped: the base the sandbox pulled holds entries no tree may
	// carry out (a hostile repository's ".git/config", "..", escaping
	// symlinks); the pushed commit leaves them out.
	FlagDropped = "dropped-entries"
	// FlagAutorun: a file that runs on its own (on cd, open, build,
	// install, test), not only in CI.
	FlagAutorun = "runs-on-its-own"
	// FlagTerminal: content that would deceive a reader: escape
	// sequences, bidi overrides, invisible characters, NULs in a script.
	FlagTerminal = "deceptive-content"
	// FlagTooLarge: the diff is too large to show whole.
	FlagTooLarge = "diff-too-large"
	// FlagBaseCommits: the target lacks the sandbox's base, so the
	// base's commits land under the worker's.
	FlagBaseCommits = "base-commits"
	// FlagRejectedAgain: a commit the reviewer rejected is in the push
	// again, unchanged: it lands as its own commit, its content in the
	// target's history, whatever later commits do.
	FlagRejectedAgain = "rejected-again"
	// FlagUnavailable: a side of a file's diff could not be read (a base
	// file its repository no longer has), so the diff cannot show it.
	FlagUnavailable = "content-unavailable"
)

// Rules configures Assess.
type Rules struct {
	// Protected lists the branch patterns an operator protects (the
	// worker file's protect list, serve --protect), in airlock's one glob
	// dialect (internal/glob, as the deny list and the file tools): "*"
	// matches within one component of the branch name ("release/*"
	// protects release/1.2, not release/1/2), "**" any number of
	// components. A push to one is flagged high, besides the branches the
	// target itself says matter (Request.RefRole). No branch is protected
	// for its name alone: "main" checked out in the user's own working
	// tree is where the default worker is meant to push.
	Protected []string
	// ManyDeletions is how many deleted files count as many; 0 means 10.
	ManyDeletions int
	// LargeFile is the size over which a file is flagged; 0 means 1 MiB.
	LargeFile int64
}

// Content reads a path's content on either side of the push; ok false
// when the path does not exist there.
type Content func(path string, newSide bool) (data []byte, ok bool)

// Assess computes the risk flags of a request, most severe first. content
// gives access to file contents for the checks that need them (secrets,
// package.json scripts); it may be nil.
func Assess(r *Request, rules Rules, content Content) []Flag {
	if rules.ManyDeletions == 0 {
		rules.ManyDeletions = 10
	}
	if rules.LargeFile == 0 {
		rules.LargeFile = 1 << 20
	}
	read := content != nil
	if content == nil {
		content = func(string, bool) ([]byte, bool) { return nil, false }
	}
	var flags []Flag
	add := func(code string, sev Severity, p, format string, args ...any) {
		flags = append(flags, Flag{Code: code, Severity: sev, Path: p, Message: fmt.Sprintf(format, args...)})
	}

	flags = append(flags, branchFlags(r, rules)...)
	if r.NewRef {
		add(FlagNewRef, Medium, "", "creates a new branch %s", ShortRef(r.Ref))
	}

	changedDirs := map[string]bool{}
	var deleted []string
	for _, f := range r.Files {
		if f.Op == change.Delete {
			deleted = append(deleted, f.Path)
		} else {
			changedDirs[path.Dir(f.Path)] = true
		}
	}
	if len(deleted) >= rules.ManyDeletions {
		add(FlagDeletions, Medium, "", "deletes %d files", len(deleted))
	}
	for _, p := range deleted {
		if !changedDirs[path.Dir(p)] {
			add(FlagDeletions, Medium, p, "deletes %s, outside the directories it otherwise changes", p)
		}
	}

	flags = append(flags, messageFlags(r.BaseCommits, r.Commits)...)
	if r.DiffTruncated {
		add(FlagTooLarge, High, "", "the diff is too large to show whole, so this push cannot be approved whole: pick fewer files ([p])")
	}
	for _, f := range r.Files {
		if f.Unavailable != "" {
			add(FlagUnavailable, High, f.Path, "the content of %s could not be read, so the diff cannot show it: %s", f.Path, clip(f.Unavailable, 160))
		}
		runs := runsFlags(f, content)
		flags = append(append(flags, runs...), renamedAwayFlags(f, content, runs)...)
		if f.Op == change.Delete {
			continue
		}
		data, ok := content(f.Path, true)
		kind, code := BinaryKind(f.Path, data)
		if f.Binary && kind == "" && !termsafe.TextFile(f.Path, data) {
			kind = "binary data" // as the diff judged it, its content unread here
		}
		if f.Size > rules.LargeFile {
			add(FlagLarge, Low, f.Path, "%s is %s", f.Path, bytesize.Format(f.Size))
		}
		if f.NewMode == filemode.Executable && f.OldMode != filemode.Executable {
			add(FlagExecutable, Medium, f.Path, "makes %s executable", f.Path)
		}
		if f.NewMode == filemode.Symlink {
			add(FlagSymlink, Medium, f.Path, "%s is a symlink to %q", f.Path, clip(string(data), 80))
			continue
		}
		if kind != "" {
			// Binary content is judged as binary: what it is and whether
			// it is new. Its bytes are not text, so the checks of text
			// (deceptive characters, secrets) would only raise false
			// alarms: a PNG starts with 0x89. What the diff shows as text
			// behind a signature is still checked as text (maskedText).
			flags = append(flags, binaryFlags(f, kind, code)...)
			shown := maskedText(data)
			if shown == nil && len(runs) > 0 {
				// A file that runs, shown as "Binary files differ": the
				// reviewer is told it runs and cannot read what (bash
				// runs a hook with NULs past its first line). A copy of
				// the repository's own bytes runs here for the first time.
				add(runs[0].Code, High, f.Path, "%s runs on its own and is binary (%s): the diff cannot show what it runs; read it before approving", f.Path, kind)
			}
			if f.CopyOf != "" || shown == nil {
				continue
			}
			data = shown
		}
		if !ok {
			continue
		}
		if h := termsafe.Hazard(data); h != "" {
			add(FlagTerminal, High, f.Path, "%s holds %s: it is shown escaped; read it with care", f.Path, h)
		} else if bytes.IndexByte(data, 0) >= 0 && termsafe.TextFile(f.Path, data) {
			add(FlagTerminal, High, f.Path, "%s is a script or text file holding NUL bytes: it is shown as text, NULs as ^@", f.Path)
		}
		old, _ := content(f.Path, false)
		for _, s := range findSecrets(old, data) {
			add(FlagSecret, High, f.Path, "%s line %d looks like %s", f.Path, s.line, s.what)
		}
	}
	if read {
		// Without contents, what the last version holds is unknown.
		flags = append(flags, historyFlags(r.Commits, flags, content)...)
	}
	SortFlags(flags)
	return flags
}

// firstKinds are the kinds listed first among flags of one severity, in
// this order: what runs on its own, then CI and hooks, so that a reviewer
// finds them together at the top of the list.
var firstKinds = []string{FlagAutorun, FlagCI}

// SortFlags orders flags most severe first and, within a severity, kind
// by kind: firstKinds, then the others in the order they first appear.
// Flags of one kind keep their order.
func SortFlags(flags []Flag) {
	rank := map[string]int{}
	for i, k := range firstKinds {
		rank[k] = i
	}
	for _, f := range flags {
		if _, ok := rank[f.Code]; !ok {
			rank[f.Code] = len(rank)
		}
	}
	sort.SliceStable(flags, func(i, j int) bool {
		a, b := flags[i], flags[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		return rank[a.Code] < rank[b.Code]
	})
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if len(a) > 0 {
		json.Unmarshal(a, &x)
	}
	if len(b) > 0 {
		json.Unmarshal(b, &y)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

type secretHit struct {
	line int
	what string
}

var secretPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY( BLOCK)?-----`)},
	{"an AWS access key id", regexp.MustCompile(`\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`)},
	{"a GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b`)},
	{"a Slack token", regexp.MustCompile(`\bxox[baprs]-[A-Za-z0-9-]{10,}\b`)},
	{"a secret assignment", regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|client[_-]?secret|private[_-]?key)["']?\s*[:=]\s*["']?([^\s"'<>{}$]{6,})`)},
}

// findSecrets reports lines of data that look like secrets and are not
// already in old (a secret the target already has is not news). The
// secret itself is never reported, only where and what it looks like.
func findSecrets(old, data []byte) []secretHit {
	before := map[string]bool{}
	for _, l := range bytes.Split(old, []byte("\n")) {
		before[string(l)] = true
	}
	var hits []secretHit
	for i, l := range bytes.Split(data, []byte("\n")) {
		if len(l) > 4096 || before[string(l)] {
			continue
		}
		for _, p := range secretPatterns {
			if m := p.re.FindSubmatch(l); m != nil && !pathValue(m[len(m)-1]) {
				hits = append(hits, secretHit{line: i + 1, what: p.what})
				break
			}
		}
	}
	return hits
}

// pathValue reports whether an assigned value is a path (PWD=/nix/store,
// password_file: ./secrets/db): where a secret is, or a directory, never
// the secret itself.
func pathValue(v []byte) bool {
	return len(v) > 0 && (v[0] == '/' || v[0] == '.' || v[0] == '~')
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
