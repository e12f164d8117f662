package model

import (
	"errors"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/difftext"
	"github.com/airlock-dev/airlock/internal/change"
)

// Shown is what a review shows of its request.
type Shown int

const (
	// ShownPush is the whole push: commit by commit when the request
	// carries each commit's files (so hunks can be picked), else its diff.
	// A front-end shows one commit by showing only its files (Commit).
	ShownPush Shown = iota
	// ShownInterdiff is what changed since the request the reviewer saw
	// last (approval.Since): read, commented on, not picked from.
	ShownInterdiff
	// ShownIgnoringSpace is the diff with whitespace ignored (git diff
	// -w): read, commented on, not picked from.
	ShownIgnoringSpace
)

// Line is one line of a hunk.
type Line struct {
	// Kind is the diff's first character: ' ' context, '+' added, '-'
	// deleted, '\\' git's "\ No newline at end of file".
	Kind byte
	Text string // the line without its first character
	// Old and New are its numbers on each side, from 1; 0 where the side
	// has no such line (an added line has no Old).
	Old, New int
	// Changed is its place among the hunk's '+' and '-' lines (as
	// approval.AcceptedHunk.Lines counts them); -1 for the others.
	Changed int
}

// Hunk is one hunk of a file.
type Hunk struct {
	Ref    Ref
	Header string // its "@@" line
	Text   string // the hunk as git printed it: the header, then its lines
	// lines are its lines after the header, read on first use (Lines):
	// a view of a 20,000-line push reads those it shows.
	lines []Line
	id    string
}

// ID is the hunk's content id, approval.HunkID(Text), made on first use:
// hashing every hunk of a big push before its first screen would cost a
// copy of its text.
func (h *Hunk) ID() string {
	if h.id == "" {
		h.id = approval.HunkID(h.Text)
	}
	return h.id
}

// Lines are the hunk's lines after its header, numbered.
func (h *Hunk) Lines() []Line {
	if h.lines == nil {
		h.lines = parseLines(h.Text)
	}
	return h.lines
}

// File is one file of a commit (or of the shown diff).
type File struct {
	Path string
	// From is a rename's or copy's old path ("" for the others).
	From   string
	Op     change.Kind
	Binary bool
	// Whole says the file is picked whole or not at all: its line
	// endings change in the same hunks as its edits, and it is shown as
	// difftext shows it ("line endings: LF -> CRLF", then the edits), so
	// only the whole of it lands as what was shown.
	Whole  bool
	Header string // "diff --git ..." up to the first hunk
	Hunks  []Hunk
	// Span is, for a file read from one diff (Review.Diff), where its
	// section is in it.
	Span [2]int
	// key names the file's change for viewed marks (Review.Key).
	key string
}

// Commit is one commit of the shown diff; a diff without commits (the
// whole push's, an interdiff) is one Commit with a zero ID.
type Commit struct {
	ID      plumbing.Hash
	Message string
	Files   []File
	// Base says these are the files that land as the push's base has
	// them (approval.FileChange.FromBase): shown, not picked from.
	Base bool
}

// Ref names a hunk: Hunk -1 is the file as a whole (one without hunks).
type Ref struct{ Commit, File, Hunk int }

// FileRef names a file of a commit.
type FileRef struct{ Commit, File int }

// Review is one request under review.
type Review struct {
	Request *approval.Request
	Shown   Shown
	Commits []Commit
	// Diff is the text the files were read from, when they were read
	// from one (each File's Span is in it); "" for commits' files.
	Diff string
	// mode is how a selection is sent: by hunk (Accept), by file
	// (Paths), or not at all.
	mode pickMode

	left      map[Ref]bool         // hunks (or files) left out
	leftLines map[Ref]map[int]bool // lines left out of a hunk, by Changed
	comments  []approval.Comment
	viewed    map[string]bool
	order     []FileRef
}

type pickMode int

const (
	pickNone pickMode = iota
	pickFiles
	pickHunks
)

// Errors a review's changes can meet. Their advice is in the terminal's
// keys, the one front-end today (in the full-screen view f is the file
// list: the whole push is f at the prompt, after q).
var (
	ErrReadOnly    = errors.New("no pick from an interdiff: q, then f, shows the whole push")
	ErrSpaceShown  = errors.New("nothing is picked with whitespace ignored: w shows it all")
	ErrWholeFile   = errors.New("this file's line endings change with its edits: it is accepted or left out whole (y or x)")
	ErrNotPickable = errors.New("nothing can be picked from this push: approve it whole or reject it")
	ErrWholeFiles  = errors.New("this push is picked file by file: a file is accepted or left out whole")
	ErrNoSuchHunk  = errors.New("no such hunk")
	ErrNoSuchLine  = errors.New("no such changed line in the hunk")
	ErrFromBase    = errors.New("this file lands as the push's base has it: it cannot be left out (reject the push to stop it)")
)

// New is the review of r's whole push: commit by commit, hunks to pick,
// where r carries each commit's own files; else r's diff, file by file.
func New(r *approval.Request) *Review {
	m := newReview(r, ShownPush)
	if HunkPickable(r) {
		m.mode = pickHunks
		for ci, c := range r.Commits {
			mc := Commit{ID: c.ID, Message: c.Message}
			for fi, fd := range c.Files {
				mc.Files = append(mc.Files, commitFile(fd, ci, fi))
			}
			m.Commits = append(m.Commits, mc)
		}
		m.addBase(r)
	} else {
		if r.Pickable {
			m.mode = pickFiles
		}
		m.Diff = difftext.Show(r.Diff, difftext.Mode{})
		m.Commits = []Commit{{Files: ParseDiff(m.Diff, 0)}}
	}
	m.finish()
	return m
}

// commitFile is a commit's file as the review shows it: its hunks, or,
// for a file whose line endings change, as difftext shows it, picked
// whole.
func commitFile(fd approval.FileDiff, ci, fi int) File {
	f := File{Path: fd.Path, From: fd.From, Op: fd.Op, Binary: fd.Binary, Header: fd.Header}
	hunks := fd.Hunks
	if difftext.LineEndings(fd.Hunks) != "" {
		f.Whole = true
		f.Header, hunks = difftext.File(fd.Header, fd.Hunks, difftext.Mode{})
	}
	for hi, h := range hunks {
		f.Hunks = append(f.Hunks, parseHunk(h, Ref{ci, fi, hi}))
	}
	return f
}

// NewInterdiff is the review of diff, what changed in r since the
// request the reviewer saw last (r.Since.Interdiff, with the prompt's
// words around it): read and commented on, not picked from.
func NewInterdiff(r *approval.Request, diff string) *Review {
	return newRead(r, difftext.Show(diff, difftext.Mode{}), ShownInterdiff)
}

// NewIgnoringSpace is the review of diff (r's, or an interdiff) with
// whitespace ignored, as git diff -w shows it: read and commented on, not
// picked from.
func NewIgnoringSpace(r *approval.Request, diff string) *Review {
	return newRead(r, difftext.Show(diff, difftext.Mode{IgnoreSpace: true}), ShownIgnoringSpace)
}

func newRead(r *approval.Request, diff string, s Shown) *Review {
	m := newReview(r, s)
	m.Commits = []Commit{{Files: ParseDiff(diff, 0)}}
	m.Diff = diff
	m.finish()
	return m
}

// addBase adds the files that land from the base, as r's diff has them:
// no commit of the worker's carries them, yet they land, so they are shown.
func (m *Review) addBase(r *approval.Request) {
	base := map[string]bool{}
	for _, f := range r.Files {
		if f.FromBase {
			base[f.Path] = true
		}
	}
	if len(base) == 0 {
		return
	}
	c := Commit{Base: true, Message: "the base's files"}
	for _, f := range ParseDiff(r.Diff, len(m.Commits)) {
		if base[f.Path] {
			for hi := range f.Hunks {
				f.Hunks[hi].Ref.File = len(c.Files)
			}
			c.Files = append(c.Files, f)
		}
	}
	m.Commits = append(m.Commits, c)
}

func newReview(r *approval.Request, s Shown) *Review {
	return &Review{Request: r, Shown: s, left: map[Ref]bool{}, leftLines: map[Ref]map[int]bool{}, viewed: map[string]bool{}}
}

func (m *Review) finish() { m.order = m.rank() }

// HunkPickable reports whether the reviewer picks r hunk by hunk: it can
// be picked from and carries each commit's own files. A request without
// them (from a server that does not send them) is picked file by file.
// The line prompt asks the same (one rule, so p and the view never
// disagree on how a push is picked).
func HunkPickable(r *approval.Request) bool {
	if !r.Pickable {
		return false
	}
	for _, c := range r.Commits {
		if len(c.Files) > 0 {
			return true
		}
	}
	return false
}

// File is the file f names; nil when there is none.
func (m *Review) File(f FileRef) *File {
	if f.Commit < 0 || f.Commit >= len(m.Commits) || f.File < 0 || f.File >= len(m.Commits[f.Commit].Files) {
		return nil
	}
	return &m.Commits[f.Commit].Files[f.File]
}

// Hunk is the hunk h names; nil when there is none.
func (m *Review) Hunk(h Ref) *Hunk {
	f := m.File(FileRef{h.Commit, h.File})
	if f == nil || h.Hunk < 0 || h.Hunk >= len(f.Hunks) {
		return nil
	}
	return &f.Hunks[h.Hunk]
}

// parseHunk reads a hunk as git prints it; its lines are read when
// asked for.
func parseHunk(text string, ref Ref) Hunk {
	head, _, _ := strings.Cut(text, "\n")
	return Hunk{Ref: ref, Text: text, Header: head}
}

// HunkStart is where a hunk's "@@ -old,n +new,n @@" line says it starts
// on each side (1, 1 for a line that is not one). It is read by hand, not
// by a regular expression: a big push's first screen reads every hunk's.
func HunkStart(header string) (old, new int) {
	rest, ok := strings.CutPrefix(header, "@@ -")
	if !ok {
		return 1, 1
	}
	old, rest = leadingNumber(rest)
	if i := strings.IndexByte(rest, ' '); i >= 0 && strings.HasPrefix(rest[i:], " +") {
		new, _ = leadingNumber(rest[i+2:])
	}
	return max(old, 1), max(new, 1)
}

// leadingNumber is the number s starts with (0: none), and what follows.
func leadingNumber(s string) (int, string) {
	n, i := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1<<40; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n, s[i:]
}

// parseLines numbers a hunk's lines after its header.
func parseLines(text string) []Line {
	head, body, _ := strings.Cut(strings.TrimSuffix(text, "\n"), "\n")
	old, nu := HunkStart(head)
	out := make([]Line, 0, strings.Count(body, "\n")+1)
	changed := 0
	for body != "" {
		var l string
		l, body, _ = strings.Cut(body, "\n")
		ln := Line{Kind: ' ', Changed: -1}
		if l != "" {
			ln.Kind, ln.Text = l[0], l[1:]
		}
		switch ln.Kind {
		case '+':
			ln.New, ln.Changed = nu, changed
			nu++
			changed++
		case '-':
			ln.Old, ln.Changed = old, changed
			old++
			changed++
		case '\\':
		default:
			ln.Kind = ' '
			ln.Old, ln.New = old, nu
			old++
			nu++
		}
		out = append(out, ln)
	}
	return out
}

// ParseDiff reads a unified diff of several files (git diff's) into
// files and hunks, the hunks' refs in commit ci.
func ParseDiff(diff string, ci int) []File {
	files := make([]File, 0, strings.Count(diff, "\ndiff --git ")+1)
	at := 0
	for _, sec := range splitKeep(diff, "diff --git ") {
		f := File{Path: diffPath(sec), Op: change.Update, Span: [2]int{at, at + len(sec)}}
		at += len(sec)
		head, hunks := sec, ""
		if i := strings.Index(sec, "\n@@"); i >= 0 {
			head, hunks = sec[:i+1], sec[i+1:]
		}
		f.Header = head
		for _, l := range strings.Split(head, "\n") {
			for _, verb := range []string{"rename", "copy"} {
				if p, ok := strings.CutPrefix(l, verb+" from "); ok {
					f.From = unquote(p)
				}
				if p, ok := strings.CutPrefix(l, verb+" to "); ok {
					f.Path = unquote(p)
				}
			}
		}
		switch {
		case strings.Contains(head, "\nnew file mode"):
			f.Op = change.Create
		case strings.Contains(head, "\ndeleted file mode"):
			f.Op = change.Delete
		}
		f.Binary = strings.Contains(head, "\nBinary files ") || strings.Contains(head, "\nGIT binary patch")
		if hunks != "" {
			for hi, h := range splitKeep(hunks, "@@ -") {
				f.Hunks = append(f.Hunks, parseHunk(h, Ref{ci, len(files), hi}))
			}
		}
		files = append(files, f)
	}
	return files
}

// splitKeep cuts s before each line that starts with prefix; text before
// the first such line is its own part.
func splitKeep(s, prefix string) []string {
	out := make([]string, 0, strings.Count(s, "\n"+prefix)+1)
	start := 0
	for at := 0; at < len(s); {
		if at > start && strings.HasPrefix(s[at:], prefix) {
			out = append(out, s[start:at])
			start = at
		}
		nl := strings.IndexByte(s[at:], '\n')
		if nl < 0 {
			break
		}
		at += nl + 1
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// diffPath is the path a "diff --git a/P b/P" section names: its new
// side, the line cut in the middle when both sides have the same length;
// a name git quoted is unquoted.
func diffPath(sec string) string {
	line, _, _ := strings.Cut(sec, "\n")
	if !strings.HasPrefix(line, "diff --git ") {
		return "(before the first file)"
	}
	rest := strings.TrimPrefix(line, "diff --git ")
	side := rest
	if len(rest)%2 == 1 {
		side = rest[len(rest)/2+1:]
	} else if i := strings.LastIndex(rest, " b/"); i >= 0 {
		side = rest[i+1:]
	}
	return strings.TrimPrefix(unquote(side), "b/")
}

// unquote is a name git quoted (a control character, a byte outside
// ASCII) as it is.
func unquote(p string) string {
	if strings.HasPrefix(p, `"`) {
		if u, err := strconv.Unquote(p); err == nil {
			return u
		}
	}
	return p
}
