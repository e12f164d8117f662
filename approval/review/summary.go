package review

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// confirmPick shows what the reviewer picked (which commits land, with
// which message, how much of each file) and what stays in the sandbox, and
// asks before it is sent. sel has one entry per commit of the request, in
// order.
func (a *asker) confirmPick(sel []approval.Accepted) (bool, error) {
	t := a.t
	fmt.Fprint(t, fitSummary(pickSummary(a.r, sel, a.p), sizeOf(t)))
	lands := 0
	for _, s := range sel {
		if len(s.Files) > 0 {
			lands++
		}
	}
	for {
		fmt.Fprintf(t, "  Push %s? [y]es  [n]o, back to the prompt  ", plural(lands, "commit"))
		key, err := t.ReadKey()
		if err != nil {
			return false, err
		}
		switch key {
		case 'y', 'Y':
			return true, nil
		case 'n', 'N', 'q', 'Q':
			return false, nil
		case 'l', 'L':
			if a.opt.back {
				return false, errBack
			}
		}
		fmt.Fprintf(t, "  Unknown key %q: y pushes what you picked, n goes back to the prompt.\n", key)
	}
}

// pickSummary is the summary confirmPick shows.
func pickSummary(r *approval.Request, sel []approval.Accepted, p painter) string {
	var b, stays strings.Builder
	head := "What you picked of request " + termsafe.Line(r.ID)
	if why := askedAgain(r); why != "" {
		head += " (" + why + ")"
	}
	b.WriteString("\n  " + p.paint(ansiBold, head+":") + "\n")
	n := 0
	if k := len(r.BaseCommits); k > 0 {
		// They are not the worker's to pick from, and the target lacks
		// them: they land whole, under what was picked.
		what := fmt.Sprintf("the base's %d commits land", k)
		if k == 1 {
			what = "the base's commit lands"
		}
		fmt.Fprintf(&b, "    %s first, whole, as the target lacks the base\n", what)
	}
	for ci, c := range r.Commits {
		s := sel[ci]
		id := p.paint(ansiYellow, shortid.HashOr(c.ID, "(none)"))
		if len(s.Files) == 0 {
			fmt.Fprintf(&b, "    %s \"%s\": left out, nothing of it lands\n", id, termsafe.Line(subject(c.Message)))
		} else {
			n++
			msg := fmt.Sprintf("with its message \"%s\"", termsafe.Line(subject(c.Message)))
			if s.Message != "" {
				msg = fmt.Sprintf("with your message \"%s\" (was \"%s\"), %s", termsafe.Line(subject(s.Message)), termsafe.Line(subject(c.Message)), bodyFate(c.Message, s.Message))
			}
			fmt.Fprintf(&b, "    %s lands as commit %d, %s:\n", id, n, msg)
		}
		for _, fd := range c.Files {
			took := acceptedOf(s, fd.Path)
			if took != nil {
				fmt.Fprintf(&b, "      %s: %s\n", termsafe.Line(fd.Path), acceptedWords(fd, took))
			}
			if left := leftOf(fd, took); left != "" {
				fmt.Fprintf(&stays, "    %s (commit %s): %s\n", termsafe.Line(fd.Path), shortid.HashOr(c.ID, "(none)"), left)
			}
		}
	}
	if stays.Len() > 0 {
		b.WriteString("  " + p.paint(ansiBold, "Stays in the sandbox, not pushed:") + "\n" + stays.String())
	} else {
		b.WriteString("  Nothing stays in the sandbox: every hunk lands.\n")
	}
	return b.String()
}

// acceptedOf is what sel accepted of path, or nil.
func acceptedOf(sel approval.Accepted, path string) *approval.AcceptedFile {
	for i := range sel.Files {
		if sel.Files[i].Path == path {
			return &sel.Files[i]
		}
	}
	return nil
}

// acceptedWords says in words what was accepted of a file.
func acceptedWords(fd approval.FileDiff, af *approval.AcceptedFile) string {
	if len(fd.Hunks) == 0 {
		return "whole"
	}
	s := fmt.Sprintf("%d of %d hunks", len(af.Hunks), len(fd.Hunks))
	if allOf(fd, af) {
		s = "whole (" + plural(len(fd.Hunks), "hunk") + ")"
	}
	split := 0
	for _, h := range af.Hunks {
		if h.Lines != nil {
			split++
		}
	}
	if split > 0 {
		s += fmt.Sprintf(", %d of them in part (some lines)", split)
	}
	return s
}

// leftOf says what of a file stays in the sandbox; "" when nothing does.
func leftOf(fd approval.FileDiff, af *approval.AcceptedFile) string {
	switch {
	case af == nil && len(fd.Hunks) == 0:
		return "the whole file"
	case af == nil:
		return "all " + plural(len(fd.Hunks), "hunk")
	case allOf(fd, af):
		return ""
	}
	left, part := len(fd.Hunks)-len(af.Hunks), 0
	for _, h := range af.Hunks {
		if h.Lines != nil {
			part++
		}
	}
	var s []string
	if left > 0 {
		s = append(s, plural(left, "hunk"))
	}
	if part > 0 {
		s = append(s, fmt.Sprintf("the lines left out of %s", plural(part, "hunk")))
	}
	return strings.Join(s, " and ")
}

// plural is "1 hunk", "2 hunks".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// allOf reports whether af accepts every line of fd: whole, or each of
// its hunks with none cut to lines.
func allOf(fd approval.FileDiff, af *approval.AcceptedFile) bool {
	if af.Whole {
		return true
	}
	if len(af.Hunks) != len(fd.Hunks) {
		return false
	}
	for _, h := range af.Hunks {
		if h.Lines != nil {
			return false
		}
	}
	return true
}

// bodyFate says what an edited message did with the body of the worker's.
func bodyFate(was, now string) string {
	_, old := splitMessage(was)
	_, nu := splitMessage(now)
	switch {
	case old == nu && nu == "":
		return "no body"
	case old == nu:
		return fmt.Sprintf("its body kept (%s)", plural(strings.Count(nu, "\n")+1, "line"))
	case nu == "":
		return "its body dropped"
	}
	return fmt.Sprintf("your body (%s)", plural(strings.Count(nu, "\n")+1, "line"))
}

// fitSummary shortens a pick's summary to a terminal of size, with the
// question under it: past what fits, each list of files (indented six
// spaces under a commit, four under "Stays in the sandbox") keeps its
// first lines and says how many more there are, so the summary's head
// and every commit's line stay on the screen.
func fitSummary(summary string, size screenSize) string {
	lines := strings.SplitAfter(strings.TrimSuffix(summary, "\n"), "\n")
	room := size.rows - 2 // the question, and the row it leaves
	if size.rows <= 0 || screenRows(summary, size.cols) <= room {
		return summary
	}
	// The runs of file lines, and the rows of everything else.
	type run struct{ from, to int }
	var runs []run
	fixed := 0
	stays := false
	for i, l := range lines {
		if strings.Contains(l, "Stays in the sandbox") {
			stays = true
		}
		file := strings.HasPrefix(l, "      ") || stays && strings.HasPrefix(l, "    ")
		switch {
		case !file:
			fixed += screenRows(l, size.cols)
		case len(runs) > 0 && runs[len(runs)-1].to == i:
			runs[len(runs)-1].to = i + 1
		default:
			runs = append(runs, run{i, i + 1})
		}
	}
	if len(runs) == 0 {
		return summary
	}
	each := max(1, (room-fixed)/len(runs)-1)
	var b strings.Builder
	next := 0
	for _, r := range runs {
		for _, l := range lines[next:r.from] {
			b.WriteString(l)
		}
		keep := min(each, r.to-r.from)
		for _, l := range lines[r.from : r.from+keep] {
			b.WriteString(l)
		}
		if more := r.to - r.from - keep; more > 0 {
			indent := lines[r.from][:len(lines[r.from])-len(strings.TrimLeft(lines[r.from], " "))]
			fmt.Fprintf(&b, "%s... and %d more %s\n", indent, more, strings.TrimPrefix(plural(more, "file"), fmt.Sprint(more)+" "))
		}
		next = r.to
	}
	for _, l := range lines[next:] {
		b.WriteString(l)
	}
	return strings.TrimSuffix(b.String(), "\n") + "\n"
}
