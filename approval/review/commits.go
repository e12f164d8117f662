package review

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// maxBodyLines bounds one commit's body lines in the summary, and
// maxBodyTotal all of them: the risks and the keys stay on the screen
// together; m shows every message whole.
const (
	maxBodyLines = 6
	maxBodyTotal = 12
)

// landing is every commit that lands, oldest first: the base's the
// target lacks, then the worker's.
func landing(r *approval.Request) []approval.CommitInfo {
	return append(append([]approval.CommitInfo(nil), r.BaseCommits...), r.Commits...)
}

// renderCommits lists every commit that lands with its message, the body
// under the subject, sanitised; lines a flag is about are marked. A body
// cut short says so (m shows it whole; bodiesCut puts m among the keys).
func renderCommits(b *strings.Builder, r *approval.Request, p painter, total int) {
	all := landing(r)
	base := len(r.BaseCommits)
	indent := "    "
	switch n := len(all); {
	case n == 0:
		return
	case n == 1:
		fmt.Fprintf(b, "  Commit: %s \"%s\" (%s)%s\n", p.paint(ansiYellow, shortid.HashOr(all[0].ID, "(none)")),
			termsafe.Line(subject(all[0].Message)), r.Summary(), commitNote(r, 0, base, p))
		indent = "          "
	default:
		fmt.Fprintf(b, "  Commits: %d, %s..%s (%s)\n", n, shortid.HashOr(all[0].ID, "(none)"), shortid.HashOr(all[n-1].ID, "(none)"), r.Summary())
		indent = "      "
	}
	budget, each := total, min(maxBodyLines, total)
	for i, c := range all {
		if len(all) > 1 {
			fmt.Fprintf(b, "    %s \"%s\"%s\n", p.paint(ansiYellow, shortid.HashOr(c.ID, "(none)")), termsafe.Line(subject(c.Message)), commitNote(r, i, base, p))
		}
		flagged := flaggedLines(c.Message)
		body := bodyLines(c.Message)
		for j, l := range body {
			if j == each || budget == 0 {
				more, lines := len(body)-j, "lines"
				if more == 1 {
					lines = "line"
				}
				fmt.Fprintf(b, "%s%s\n", indent, p.paint(ansiDim, fmt.Sprintf("... %d more %s of its message: [m] shows every message whole", more, lines)))
				break
			}
			budget--
			mark := p.paint(ansiDim, "|")
			if flagged[l.no] {
				mark = p.paint(ansiRed+ansiBold, "!")
			}
			fmt.Fprintf(b, "%s%s %s\n", indent, mark, termsafe.Line(clip(l.text, 200)))
		}
	}
}

// commitNote says what commit i of all (the base's first) is, beyond its
// message: the base's, or to a re-review, new, rejected or a replacement.
func commitNote(r *approval.Request, i, base int, p painter) string {
	if i < base {
		return "   " + p.paint(ansiDim, "the base's, not the worker's: the target lacks it")
	}
	s := r.Since
	if s == nil {
		return ""
	}
	id := landing(r)[i].ID
	for _, sc := range s.Commits {
		if sc.ID != id {
			continue
		}
		switch sc.Status {
		case approval.CommitRejected:
			was := ""
			if sc.Was != sc.ID {
				was = " (as " + shortid.HashOr(sc.Was, "(none)") + ")"
			}
			return "   " + p.paint(ansiRed+ansiBold, "!! you rejected it"+was+": here again, unchanged")
		case approval.CommitReplaces:
			return "   " + p.paint(ansiYellow, "replaces "+shortid.HashOr(sc.Was, "(none)")+", which you rejected")
		case approval.CommitSeen:
			return "   " + p.paint(ansiDim, "seen before")
		case approval.CommitNew:
			return "   " + p.paint(ansiGreen, "new")
		}
	}
	return ""
}

type numbered struct {
	no   int // from 1, the subject
	text string
}

// bodyLines are a message's lines after its subject, numbered as in the
// message; blank lines are left out, to keep the summary short (m shows
// the message as it is).
func bodyLines(msg string) []numbered {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	var out []numbered
	for i, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, numbered{i + 2, l})
	}
	return out
}

// flaggedLines are the lines of msg a message flag is about.
func flaggedLines(msg string) map[int]bool {
	out := map[int]bool{}
	for _, f := range approval.CheckMessage(msg) {
		out[f.Line] = true
	}
	return out
}

// allMessages is every message that lands, whole, as m shows it: plain
// text for the pager, which the caller sanitises.
func allMessages(r *approval.Request) string {
	var b strings.Builder
	base := len(r.BaseCommits)
	for i, c := range landing(r) {
		fmt.Fprintf(&b, "commit %s", c.ID)
		if i < base {
			b.WriteString(" (the base's: not the worker's; it lands too, the target lacks it)")
		}
		b.WriteString("\n\n")
		for _, l := range strings.Split(strings.TrimRight(c.Message, "\n"), "\n") {
			b.WriteString("    " + l + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// showMessages pages every message whole, sanitised: hidden characters
// are shown escaped, as everywhere else.
func (a *asker) showMessages() {
	if err := a.t.Page(termsafe.Text(allMessages(a.r))); err != nil {
		fmt.Fprintf(a.t, "  Could not show the messages: %v\n", err)
	}
	fmt.Fprintln(a.t, "  "+a.keys())
}

// bodiesCut reports whether the summary cuts a message short, so that the
// keys offer m.
func bodiesCut(r *approval.Request, budget int) bool {
	total := 0
	for _, c := range landing(r) {
		n := len(bodyLines(c.Message))
		if n > min(maxBodyLines, budget) {
			return true
		}
		total += n
	}
	return total > budget
}

// bodyBudget is how many lines of the commits' bodies the summary shows
// on a terminal of size: on a small one, a few, so that the header, the
// risks and the keys stay on it with the files (m shows them all).
func bodyBudget(size screenSize) int {
	if size.rows <= 0 {
		return maxBodyTotal
	}
	return min(maxBodyTotal, max(2, (size.rows-20)/2))
}
