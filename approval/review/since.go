package review

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// sinceComments is how many of the comments made then the summary lists;
// ? lists them all.
const sinceComments = 5

// renderSince says, first, that the request follows one the reviewer saw:
// which, what they said then, the worker's reply, and how much changed
// since (what d shows; f shows the full diff).
func renderSince(b *strings.Builder, r *approval.Request, p painter) {
	s := r.Since
	if s == nil {
		return
	}
	why := strings.TrimSpace(s.Why)
	if why == "" {
		why = "you saw it"
	}
	fmt.Fprintf(b, "  %s you saw request %s; %s.\n", p.paint(ansiBold+ansiYellow, "Asked again:"), termsafe.Line(s.Request), termsafe.Line(why))
	if strings.TrimSpace(s.Reason) != "" {
		fmt.Fprintf(b, "  Your reason then: %s\n", quoted(clip(s.Reason, 200)))
	}
	b.WriteString(commentList("Your comments then", s.Comments, sinceComments))
	if strings.TrimSpace(s.Reply) != "" {
		fmt.Fprintf(b, "  The worker replied: %s\n", quoted(clip(s.Reply, 300)))
	}
	if line := sinceCommitsLine(s); line != "" {
		b.WriteString(line)
	}
	if s.Interdiff == "" {
		b.WriteString("  Since then: nothing changed in what the push carries. [f] shows the full diff.\n")
		return
	}
	files, added, deleted := diffStat(s.Interdiff)
	fmt.Fprintf(b, "  Since then: %s, +%d -%d changed. [d] shows only that, [f] the full diff.\n", plural(files, "file"), added, deleted)
}

// diffStat counts a unified diff's files and added and deleted lines.
func diffStat(diff string) (files, added, deleted int) {
	header := false
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files++
			header = true
		case strings.HasPrefix(l, "@@"):
			header = false
		case header:
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			deleted++
		}
	}
	return files, added, deleted
}

// sinceCommitsLine counts the request's commits by what they are to the
// reviewer: new, replacing a rejected one, or rejected and here again
// (each is also marked in the list of commits).
func sinceCommitsLine(s *approval.Since) string {
	count := map[string]int{}
	for _, c := range s.Commits {
		count[c.Status]++
	}
	var parts []string
	if n := count[approval.CommitNew]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d new", n))
	}
	if n := count[approval.CommitReplaces]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d replacing a rejected one", n))
	}
	if n := count[approval.CommitSeen]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d seen before", n))
	}
	if n := count[approval.CommitRejected]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d you rejected, here again", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  Its commits: " + strings.Join(parts, "; ") + ".\n"
}

// rejectedDiffs is, for d, the own change of each commit the reviewer
// rejected that is in the push again unchanged: later commits may hide it
// from the interdiff and the full diff, but it lands.
func rejectedDiffs(s *approval.Since) string {
	var b strings.Builder
	for _, c := range s.Commits {
		if c.Status != approval.CommitRejected {
			continue
		}
		fmt.Fprintf(&b, "commit %s: you rejected it (as %s), and it lands again unchanged, as its own commit; its own change:\n\n%s\n",
			c.ID, c.Was, c.Diff)
	}
	return b.String()
}
