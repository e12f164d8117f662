package model

import (
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
)

// Errors of comments.
var (
	ErrEmptyComment = errors.New("a comment needs some text: type it, or Esc to drop it")
	ErrNoComment    = errors.New("no such comment")
	ErrBadRange     = errors.New("a comment's lines stay inside one hunk: start and end it there")
)

// CommentOn is a comment on lines from to to (their places in hunk h's
// Lines, either order) without text yet: the side is the new one if any of
// the lines has a new-side number, else the old (deleted lines only); the
// range is the lines' numbers on that side. A comment on the header of a
// file (h.Hunk -1) is on the file as a whole.
func (m *Review) CommentOn(h Ref, from, to int) (approval.Comment, error) {
	f := m.File(FileRef{h.Commit, h.File})
	if f == nil {
		return approval.Comment{}, ErrNoSuchHunk
	}
	c := approval.Comment{Path: f.Path, Commit: m.commitOf(h)}
	if h.Hunk < 0 {
		return c, nil
	}
	hk := m.Hunk(h)
	if hk == nil {
		return approval.Comment{}, ErrNoSuchHunk
	}
	if from > to {
		from, to = to, from
	}
	if from < 0 || to >= len(hk.Lines()) {
		return approval.Comment{}, ErrBadRange
	}
	first, last, oldFirst, oldLast := 0, 0, 0, 0
	for _, l := range hk.Lines()[from : to+1] {
		if l.New > 0 {
			if first == 0 {
				first = l.New
			}
			last = l.New
		}
		if l.Old > 0 {
			if oldFirst == 0 {
				oldFirst = l.Old
			}
			oldLast = l.Old
		}
	}
	switch {
	case first > 0:
		c.Line, c.EndLine = first, last
	case oldFirst > 0:
		c.Side, c.Line, c.EndLine = approval.SideOld, oldFirst, oldLast
	default:
		return approval.Comment{}, ErrBadRange // "\ No newline" alone
	}
	if c.EndLine == c.Line {
		c.EndLine = 0
	}
	return c, nil
}

// commitOf is, for a hunk of a commit that is not the last of the push to
// change its file, the commit's id: its line numbers count in it, not in
// what the push lands.
func (m *Review) commitOf(h Ref) string {
	if m.Shown == ShownInterdiff || m.Commits[h.Commit].ID.IsZero() {
		return ""
	}
	path := m.Commits[h.Commit].Files[h.File].Path
	for _, c := range m.Request.Commits[h.Commit+1:] {
		for _, fd := range c.Files {
			if fd.Path == path {
				return m.Commits[h.Commit].ID.String()
			}
		}
	}
	return ""
}

// AddComment adds c, its text trimmed; it returns its place among the
// comments.
func (m *Review) AddComment(c approval.Comment) (int, error) {
	if err := check(&c); err != nil {
		return 0, err
	}
	m.comments = append(m.comments, c)
	return len(m.comments) - 1, nil
}

func check(c *approval.Comment) error {
	c.Text = strings.TrimSpace(c.Text)
	switch {
	case c.Text == "":
		return ErrEmptyComment
	case c.Side != "" && c.Side != approval.SideNew && c.Side != approval.SideOld:
		return fmt.Errorf("a comment's side is %q or %q, not %q", approval.SideNew, approval.SideOld, c.Side)
	case c.Line < 0 || c.EndLine != 0 && c.EndLine < c.Line:
		return fmt.Errorf("a comment's lines run forward from 1: %d to %d is not a range", c.Line, c.EndLine)
	}
	return nil
}

// EditComment replaces the text of comment i.
func (m *Review) EditComment(i int, text string) error {
	if i < 0 || i >= len(m.comments) {
		return ErrNoComment
	}
	c := m.comments[i]
	c.Text = text
	if err := check(&c); err != nil {
		return err
	}
	m.comments[i] = c
	return nil
}

// DeleteComment takes comment i away.
func (m *Review) DeleteComment(i int) error {
	if i < 0 || i >= len(m.comments) {
		return ErrNoComment
	}
	m.comments = append(m.comments[:i:i], m.comments[i+1:]...)
	return nil
}

// Comments are the comments, in the order they were made; a copy.
func (m *Review) Comments() []approval.Comment {
	if len(m.comments) == 0 {
		return nil
	}
	return append([]approval.Comment(nil), m.comments...)
}

// SetComments replaces the comments (those made elsewhere: the line
// prompt's), each checked; none changes when one is bad.
func (m *Review) SetComments(cs []approval.Comment) error {
	out := make([]approval.Comment, len(cs))
	for i, c := range cs {
		if err := check(&c); err != nil {
			return fmt.Errorf("comment %d: %w", i+1, err)
		}
		out[i] = c
	}
	m.comments = out
	return nil
}

// Covers reports whether comment c is on line l of file f: its path, its
// side, its range (and its commit, when it names one).
func (m *Review) Covers(c approval.Comment, f FileRef, l Line) bool {
	file := m.File(f)
	if file == nil || c.Path != file.Path || c.Line == 0 {
		return false
	}
	if c.Commit != "" && c.Commit != m.Commits[f.Commit].ID.String() {
		return false
	}
	n := l.New
	if c.Side == approval.SideOld {
		n = l.Old
		if l.Kind != '-' {
			n = 0 // a context line is commented on its new side
		}
	}
	end := max(c.EndLine, c.Line)
	return n > 0 && n >= c.Line && n <= end
}

// Place is where comment c points, in words: "path:12", "path:3-5",
// "path:7 (old side)", "path" for a file, "(general)".
func Place(c approval.Comment) string {
	switch {
	case c.Path == "":
		return "(general)"
	case c.Line == 0:
		return c.Path
	}
	s := fmt.Sprintf("%s:%d", c.Path, c.Line)
	if c.EndLine > c.Line {
		s += fmt.Sprintf("-%d", c.EndLine)
	}
	if c.Side == approval.SideOld {
		s += " (old side)"
	}
	if c.Commit != "" {
		s += " in commit " + c.Commit[:min(7, len(c.Commit))]
	}
	return s
}
