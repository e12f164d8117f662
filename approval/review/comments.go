package review

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// comment adds a reviewer's comment for the worker: on a line or a range
// of a file (of its new side, or its old one: "old 12", a line the push
// deletes), on a file as a whole, or general. The file is chosen by
// number, the lines shown with the lines around them before the comment is
// typed; q at any question goes back without one. (The full-screen view
// comments under its cursor, with no number typed.)
func (a *asker) comment() error {
	t, r := a.t, a.r
	for i, f := range r.Files {
		fmt.Fprintf(t, "  %3d  %s %s\n", i+1, f.Op.Sign(), termsafe.Line(f.Path))
	}
	path, ok, err := a.askNumber("  Comment on which file? (a number; empty: a general comment; q to go back): ", len(r.Files))
	if err != nil || !ok {
		return err
	}
	c := approval.Comment{}
	if path > 0 {
		c.Path = r.Files[path-1].Path
		ok, err := a.askLines(&c)
		if err != nil || !ok {
			return err
		}
		if c.Line > 0 {
			io.WriteString(t, around(r, c, a.p))
		}
	}
	text, err := t.ReadLine("  Comment (empty to drop it): ")
	if err != nil {
		return err
	}
	if c.Text = strings.TrimSpace(text); c.Text == "" {
		fmt.Fprintln(t, "  No comment added.")
		return nil
	}
	a.comments = append(a.comments, c)
	io.WriteString(t, commentList("Your comments so far", a.comments, 0))
	return nil
}

// askNumber reads a number from 1 to max (max < 0: any positive one);
// empty is 0. ok is false when the reviewer went back (q); l goes back to
// the list.
func (a *asker) askNumber(question string, max int) (n int, ok bool, err error) {
	for {
		line, err := a.t.ReadLine(question)
		if err != nil {
			return 0, false, err
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			return 0, true, nil
		case strings.EqualFold(line, "q"):
			return 0, false, nil
		case strings.EqualFold(line, "l") && a.opt.back:
			return 0, false, errBack
		}
		n, err = strconv.Atoi(line)
		if err == nil && n >= 1 && (max < 0 || n <= max) {
			return n, true, nil
		}
		if max < 0 {
			fmt.Fprintf(a.t, "  %s is not a line number: type one from 1 up, Enter for none, or q to go back.\n", quoted(line))
		} else {
			fmt.Fprintf(a.t, "  %s is not a file number: type one from 1 to %d, Enter for none, or q to go back.\n", quoted(line), max)
		}
	}
}

// askLines reads which lines of c's file it is on: "12", a range
// "12-14", either after "old " for the old side; empty is the file as a
// whole. ok is false when the reviewer went back (q); l goes back to the
// list.
func (a *asker) askLines(c *approval.Comment) (ok bool, err error) {
	for {
		line, err := a.t.ReadLine("  On which line? (12, a range 12-14, old 12 for a deleted line; empty: the whole file; q back): ")
		if err != nil {
			return false, err
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			return true, nil
		case strings.EqualFold(line, "q"):
			return false, nil
		case strings.EqualFold(line, "l") && a.opt.back:
			return false, errBack
		}
		side, rest := "", line
		if len(rest) > 4 && strings.EqualFold(rest[:4], "old ") {
			side, rest = approval.SideOld, strings.TrimSpace(rest[4:])
		}
		from, to, isRange := strings.Cut(rest, "-")
		n, err1 := strconv.Atoi(strings.TrimSpace(from))
		end, err2 := n, error(nil)
		if isRange {
			end, err2 = strconv.Atoi(strings.TrimSpace(to))
		}
		if err1 == nil && err2 == nil && n >= 1 && end >= n {
			c.Side, c.Line = side, n
			if end > n {
				c.EndLine = end
			}
			return true, nil
		}
		fmt.Fprintf(a.t, "  %s is not a line number or a range: type 12, 12-14, or old 12; Enter for none, or q to go back.\n", quoted(line))
	}
}

// commentList lists comments under a title: "path:line  text", the
// general ones as such; past limit (0: none) the rest is counted, so that
// many comments cannot push the summary's keys off the screen.
func commentList(title string, cs []approval.Comment, limit int) string {
	if len(cs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s (%d):\n", title, len(cs))
	for i, c := range cs {
		if limit > 0 && i == limit {
			fmt.Fprintf(&b, "    ... and %d more: ? lists them all\n", len(cs)-limit)
			break
		}
		fmt.Fprintf(&b, "    %s  %s\n", commentPlace(c), termsafe.Line(c.Text))
	}
	return b.String()
}

// commentPlace is where a comment points, in words: its side and range
// as the model says them.
func commentPlace(c approval.Comment) string { return termsafe.Line(model.Place(c)) }

// around is the lines of c's side of its file around its lines, as the
// diff shows them, its lines marked, so the reviewer sees what they
// comment on.
func around(r *approval.Request, c approval.Comment, p painter) string {
	lines := sideLines(fileDiffText(r, c.Path), c.Side == approval.SideOld)
	end := max(c.Line, c.EndLine)
	if _, ok := lines[c.Line]; !ok {
		return fmt.Sprintf("  Line %d of %s is not in the diff shown; the comment still names it.\n", c.Line, termsafe.Line(c.Path))
	}
	var b strings.Builder
	for n := c.Line - 3; n <= end+3; n++ {
		text, ok := lines[n]
		if !ok {
			continue
		}
		mark := "  "
		if n >= c.Line && n <= end {
			mark = p.paint(ansiBold, "> ")
		}
		// A tab is spaces here, not termsafe's ^I: the line is shown
		// for reading, as the diff shows it.
		fmt.Fprintf(&b, "  %s%5d  %s\n", mark, n, termsafe.Line(strings.ReplaceAll(text, "\t", "    ")))
	}
	return b.String()
}

// fileDiffText is path's part of the diff: its section of the whole diff
// (whose new side is what the push brings), else, for a name git quotes
// in its headers, the hunks of the last commit that changes it.
func fileDiffText(r *approval.Request, path string) string {
	for _, sec := range strings.SplitAfter(r.Diff, "\ndiff --git ") {
		first, _, _ := strings.Cut(strings.TrimPrefix(sec, "diff --git "), "\n")
		if strings.HasSuffix(first, " b/"+path) {
			return sec
		}
	}
	for i := len(r.Commits) - 1; i >= 0; i-- {
		for _, fd := range r.Commits[i].Files {
			if fd.Path == path {
				return strings.Join(fd.Hunks, "")
			}
		}
	}
	return ""
}

// sideLines maps a side's line numbers to their text, for the lines a
// diff shows of it: the new side's context and added lines, or (old) the
// old side's context and deleted ones.
func sideLines(diff string, old bool) map[int]string {
	out := map[int]string{}
	o, n, in := 0, 0, false
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "@@ -") {
			o, n = model.HunkStart(l)
			in = true
			continue
		}
		if !in || l == "" {
			continue
		}
		switch l[0] {
		case ' ':
			if old {
				out[o] = l[1:]
			} else {
				out[n] = l[1:]
			}
			o++
			n++
		case '+':
			if !old {
				out[n] = l[1:]
			}
			n++
		case '-':
			if old {
				out[o] = l[1:]
			}
			o++
		case '\\':
		default:
			in = false // past the hunks: a header line
		}
	}
	return out
}
