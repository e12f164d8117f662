package gittools

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/session/push"
)

// landedLines tells the worker what a push the reviewer accepted part of
// carried: each commit that landed, each of its commits left out whole,
// and what stayed unstaged in its sandbox, so it knows what to rework.
func landedLines(res push.Result) []string {
	lines := []string{fmt.Sprintf("pushed %s to %s (%s), with only what the reviewer accepted; these commits landed:",
		plural(len(res.Landed), "commit"), res.Target, res.Branch)}
	for _, c := range res.Landed {
		lines = append(lines, fmt.Sprintf("  %s %s", shortid.Hash(c.ID), c.Subject))
	}
	for _, c := range res.Dropped {
		lines = append(lines, fmt.Sprintf("your commit %s %q was left out whole: nothing of it was pushed", shortid.Hash(c.ID), c.Subject))
	}
	if len(res.LeftOut) == 0 {
		return append(lines, "nothing of your commits was left out")
	}
	var left []string
	for _, f := range res.LeftOut {
		what := "its change"
		if f.Hunks > 0 {
			what = plural(f.Hunks, "hunk")
		}
		left = append(left, fmt.Sprintf("%s (%s)", f.Path, what))
	}
	return append(lines, fmt.Sprintf("left unstaged in your sandbox, not accepted: %s; git_diff shows them, git_stage them again to push them later",
		strings.Join(left, ", ")))
}
