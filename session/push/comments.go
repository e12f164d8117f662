package push

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// contextLines is how many lines around a commented line the worker is
// shown, each side: enough to find the place again after it edits.
const contextLines = 3

// maxContextLine bounds one quoted line: a minified file's line is not
// worth a worker's context window.
const maxContextLine = 240

// Open is a reviewer's comments a worker has not answered yet: the
// comments on a push from Repo, as the worker is told them (Text). They
// are answered when the worker pushes again from that repository.
type Open struct {
	Repo    string `json:"repo,omitempty"`
	Request string `json:"request"`
	Target  string `json:"target"`
	Branch  string `json:"branch"`
	Text    string `json:"text"`
}

// OpenLocked is the comments waiting for the worker's answer, a
// repository's at a time, by repository name.
func (b *Book) OpenLocked() []Open {
	var out []Open
	for _, name := range slices.Sorted(maps.Keys(b.open)) {
		out = append(out, *b.open[name])
	}
	return out
}

// OpenText words open comments for the worker: "" when there are none.
func OpenText(open []Open) string {
	if len(open) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Open review comments: the reviewer is waiting for your answer to these.")
	for _, o := range open {
		where := o.Target + " (" + o.Branch + ")"
		if o.Repo != "" {
			where = "repository " + o.Repo + ", " + where
		}
		fmt.Fprintf(&b, "\n\nOn your push to %s, request %s:\n%s", where, o.Request, o.Text)
	}
	return b.String()
}

// RestoreOpenLocked installs the open comments a saved session had.
func (b *Book) RestoreOpenLocked(open []Open) {
	for _, o := range open {
		b.open[o.Repo] = &o
	}
}

// commentedLocked keeps the reviewer's comments on p's request (decided
// dec) open for the worker and returns them as the worker reads them ("",
// when there are none).
func (b *Book) commentedLocked(p *push, dec approval.Decision) string {
	if len(dec.Comments) == 0 {
		return ""
	}
	base := p.req.Old
	if base.IsZero() {
		base = p.req.Fork
	}
	text := RenderComments(b.cfg.Store, Sides{Tree: p.req.Tree, Base: base}, dec.Verdict, dec.Comments)
	b.open[p.r.Name()] = &Open{Repo: p.r.Name(), Request: p.req.ID, Target: p.t.Describe(), Branch: targets.BranchName(p.ref), Text: text}
	return text
}

// answeredLocked marks r's open comments answered (the worker pushed from
// r again) and returns what was open.
func (b *Book) answeredLocked(r Repo) *Open {
	o := b.open[r.Name()]
	delete(b.open, r.Name())
	return o
}

// RenderComments words a reviewer's comments on the push of tree for the
// worker, in a shape it can act on: a heading that says what to do, the
// general comments, then each comment on a file as path:line, the lines
// around it (numbered, the line itself marked) and the remark.
//
// A comment on the old side (a line the push deletes) is quoted from the
// base's tree, one naming a commit from that commit's (or its parent's),
// and a range is quoted whole, each of its lines marked.
func RenderComments(store *staging.Store, sides Sides, verdict approval.Verdict, comments []approval.Comment) string {
	var b strings.Builder
	what := "asked for changes"
	if verdict != approval.Reject {
		what = "approved the push, with comments for your next change"
	}
	fmt.Fprintf(&b, "The reviewer %s: %d %s.\n", what, len(comments), plural(len(comments), "comment", "comments"))
	if verdict == approval.Reject {
		// A commit staged on top of the rejected one would carry it to
		// the target: it is replaced or dropped instead.
		b.WriteString("Address each one: fix the files, replace the rejected commit with git_stage amend: true (or drop it with git_discard), then git_push again with reply saying what you changed (or why not).\n")
	} else {
		b.WriteString("Address each one, git_stage, then git_push again with reply saying what you changed (or why not).\n")
	}
	ordered := slices.Clone(comments)
	// General comments first, then by file and line, as a reader goes.
	slices.SortStableFunc(ordered, func(x, y approval.Comment) int {
		if c := strings.Compare(x.Path, y.Path); c != 0 {
			return c
		}
		return x.Line - y.Line
	})
	for i, c := range ordered {
		fmt.Fprintf(&b, "\n%d. ", i+1)
		switch {
		case c.Path == "":
			b.WriteString("General comment\n")
		case c.Line <= 0:
			fmt.Fprintf(&b, "%s (the whole file)\n", c.Path)
		default:
			b.WriteString(commentPlace(c) + "\n")
			b.WriteString(quoteAround(store, sides.tree(store, c), c.Path, c.Line, max(c.Line, c.EndLine)))
		}
		b.WriteString(indent("Comment: "+c.Text, "   ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Sides are what a push's comments count lines in: the pushed tree (the
// new side) and the commit it goes onto (the old side; zero for none).
type Sides struct {
	Tree plumbing.Hash
	Base plumbing.Hash
}

// tree is the tree c's lines count in, nil when the sandbox lacks it.
func (s Sides) tree(store *staging.Store, c approval.Comment) *object.Tree {
	old := c.Side == approval.SideOld
	var h plumbing.Hash
	switch {
	case c.Commit != "":
		cm, err := object.GetCommit(store, plumbing.NewHash(c.Commit))
		if err != nil {
			return nil
		}
		if h = cm.TreeHash; old {
			if cm.NumParents() == 0 {
				return nil
			}
			p, err := cm.Parent(0)
			if err != nil {
				return nil
			}
			h = p.TreeHash
		}
	case old:
		cm, err := object.GetCommit(store, s.Base)
		if err != nil {
			return nil
		}
		h = cm.TreeHash
	default:
		h = s.Tree
	}
	if h.IsZero() {
		return nil
	}
	t, err := object.GetTree(store, h)
	if err != nil {
		return nil
	}
	return t
}

// commentPlace is where a comment on lines points: "path:12", a range
// "path:12-14", with the side it counts in when it is the old one and
// the commit when it names one.
func commentPlace(c approval.Comment) string {
	s := fmt.Sprintf("%s:%d", c.Path, c.Line)
	if c.EndLine > c.Line {
		s += fmt.Sprintf("-%d", c.EndLine)
	}
	if c.Side == approval.SideOld {
		s += " (old side: as the file was before the push; the push deletes or changes it)"
	}
	if c.Commit != "" {
		s += " (as commit " + c.Commit[:min(12, len(c.Commit))] + " has it)"
	}
	return s
}

// quoteAround is the lines of path around lines line to end (from 1) in
// t, numbered, the commented ones marked with ">", or why they cannot be
// shown.
func quoteAround(store *staging.Store, t *object.Tree, path string, line, end int) string {
	if t == nil {
		return "   (the pushed tree is no longer in the sandbox, so its lines cannot be shown)\n"
	}
	e, err := t.FindEntry(path)
	if err != nil || !e.Mode.IsFile() {
		return "   (the pushed commit has no file there)\n"
	}
	data, err := store.ReadBlob(e.Hash)
	if err != nil {
		return fmt.Sprintf("   (the file could not be read: %v)\n", err)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "   (a binary file)\n"
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(data) == 0 {
		lines = nil
	}
	if line > len(lines) {
		return fmt.Sprintf("   (line %d is past the end of the file, which has %d %s)\n", line, len(lines), plural(len(lines), "line", "lines"))
	}
	from, to := max(1, line-contextLines), min(len(lines), end+contextLines)
	width := len(fmt.Sprint(to))
	var b strings.Builder
	for n := from; n <= to; n++ {
		mark := " "
		if n >= line && n <= end {
			mark = ">"
		}
		text := strings.TrimSuffix(lines[n-1], "\r")
		if len(text) > maxContextLine {
			cut := maxContextLine
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + "…"
		}
		fmt.Fprintf(&b, " %s %*d | %s\n", mark, width, n, text)
	}
	return b.String()
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+by)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
