package review

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// fitLines keeps the file lines that fit the screen with used rows
// already taken (the lines above, the keys and the line the reviewer
// types on), and says how many were left out. A line wider than the
// terminal takes more than one row: counting lines alone would scroll the
// risks off the top.
func fitLines(lines []string, size screenSize, used int) ([]string, int) {
	if size.rows <= 0 {
		return lines, 0
	}
	room := size.rows - used
	took, fit := 0, 0
	for i, l := range lines {
		need := screenRows(l, size.cols)
		if i < len(lines)-1 {
			need++ // the line that says how many more there are
		}
		if took+need > room {
			break
		}
		took += screenRows(l, size.cols)
		fit++
	}
	return lines[:fit], len(lines) - fit
}

// inlineFlags is the labels of the flags on path ("" the target line's:
// protected and new branch), for the end of its line.
func inlineFlags(r *approval.Request, path string, p painter) string {
	var labels []string
	sev := approval.Severity(0)
	for _, f := range r.Flags {
		if f.Path == path && (path != "" || f.Code == approval.FlagProtectedRef || f.Code == approval.FlagNewRef) {
			labels = append(labels, flagLabel(f))
			sev = max(sev, f.Severity)
		}
	}
	if len(labels) == 0 {
		return ""
	}
	code := ansiYellow
	if sev == approval.High {
		code = ansiRed + ansiBold
	}
	return "   " + p.paint(code, "! "+strings.Join(uniq(labels), ", "))
}

// baseLine says what the push is diffed against. The target's commit is
// the one it had when the request was asked: another push may have moved
// the branch since, and when this reviewer approved one (moved), the line
// says so; approving then lands only if what lands is unchanged, else the
// reviewer is asked again. A new branch is diffed against the commit it
// forks from, when the server knows it.
func baseLine(r *approval.Request, moved bool) string {
	asked := "when this was asked"
	if !r.Time.IsZero() {
		asked = "when this was asked, " + r.Time.Format("15:04:05")
	}
	switch {
	case len(r.BaseCommits) > 0:
		return "  Base:   none: the target lacks the sandbox's base, so the base's commits land too\n"
	case (r.NewRef || r.Old.IsZero()) && !r.Fork.IsZero():
		on := shortid.Hash(r.Fork)
		if r.ForkRef != "" {
			on = termsafe.Line(approval.ShortRef(r.ForkRef)) + " at " + on
		}
		return "  Base:   none: new branch, diffed against " + on + "\n"
	case r.NewRef || r.Old.IsZero():
		return "  Base:   none: the branch is new\n"
	case moved:
		return fmt.Sprintf("  Base:   %s (the branch's commit %s)\n"+
			"  Moved:  the branch has moved since: you approved another push to it; if what\n"+
			"          lands changes, approving asks you again\n", shortid.Hash(r.Old), asked)
	}
	return fmt.Sprintf("  Base:   %s (the branch's commit %s)\n", shortid.Hash(r.Old), asked)
}

// keyWidth is the widest a line of keys or a header is drawn, its
// indent included: an 80-column terminal, less the column a terminal
// wraps at.
const keyWidth = 78

// wrapParts joins parts with sep into lines of at most width cells
// (their colours not counted), breaking only between parts: a key and
// its word are never cut. Lines after the first start with indent.
func wrapParts(parts []string, sep, indent string, width int) string {
	var b strings.Builder
	line := 0
	for i, part := range parts {
		w := cellWidth(sgr.ReplaceAllString(part, ""))
		switch {
		case i == 0:
		case line+len(sep)+w > width:
			b.WriteString("\n" + indent)
			line = len(indent)
		default:
			b.WriteString(sep)
			line += len(sep)
		}
		b.WriteString(part)
		line += w
	}
	return b.String()
}
