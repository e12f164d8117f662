package gittools

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
)

// workspaceText tells the worker what its workspace holds as the session
// starts (or resumes): which repository, branch and commit, how many
// files and where, and where a push goes, so that its first call is work,
// not a question.
func workspaceText(s *session.Session) string {
	cs := s.Contents()
	where := "at the workspace's root"
	if s.MayRun() {
		where += " (commands of run see it at " + sandbox.Workspace + ")"
	}
	if len(cs) == 1 && cs[0].Repo == "" {
		return "The workspace holds " + describeContents(cs[0], where)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The workspace holds %d repositories, each in its directory:", len(cs))
	for _, c := range cs {
		fmt.Fprintf(&b, "\n- %s/: %s", c.Repo, describeContents(c, "under "+c.Repo+"/"))
	}
	return b.String()
}

// describeContents is one repository's part: "branch main of local:/x at
// 3e5126c ("Subject"): 120 files, at the workspace's root. ...".
func describeContents(c session.Contents, where string) string {
	var b strings.Builder
	push := c.PushTo
	switch {
	case c.PushBranch != "":
		push += " (branch " + c.PushBranch + ")"
	case c.From == c.PushTo && c.Branch != "":
		push += " (branch " + c.Branch + ")"
	default:
		push += " (its default branch)"
	}
	switch {
	case !c.Commit.IsZero():
		what := "branch " + c.Branch + " of " + c.From
		if c.From == "" {
			what = "commit"
		}
		if len(c.Paths) > 0 {
			what = strings.Join(c.Paths, ", ") + " of " + what
		}
		fmt.Fprintf(&b, "%s at %s (%q): %s, %s; a file's content is read from there when first needed. "+
			"git_status shows your changes against that commit; git_push sends staged commits to %s.",
			what, shortid.Hash(c.Commit), c.Subject, plural(c.Files, "file"), where, push)
	case c.Pulls:
		fmt.Fprintf(&b, "no files yet: the branch this worker pulls has no commits. What you write, git_stage and git_push to %s makes its first commit.", push)
	default:
		fmt.Fprintf(&b, "no files yet: this worker pulls nothing at start. git_pull brings a target's files in; git_push sends staged commits to %s.", push)
	}
	if c.Unstaged > 0 || c.Staged > 0 {
		fmt.Fprintf(&b, " Already there: %s not staged, %s (git_status lists them).",
			plural(c.Unstaged, "change"), plural(c.Staged, "staged commit"))
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
