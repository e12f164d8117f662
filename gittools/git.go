package gittools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/textcap"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
)

const (
	statusMaxFiles = 200
	diffMaxBytes   = 64 << 10
)

type statusArgs struct {
	Repo    string `json:"repo,omitempty" jsonschema:"in a session with several repositories, only this one; omit for all"`
	Ignored bool   `json:"ignored,omitempty" jsonschema:"also list the untracked files .gitignore excludes, as git status --ignored does"`
}

type stageArgs struct {
	Repo    string   `json:"repo,omitempty" jsonschema:"in a session with several repositories, which one (its name, also its directory in the workspace); omit it when there is one, or when the paths or the commit say which"`
	Files   []string `json:"files,omitempty" jsonschema:"files or directories (workspace paths) whose changes to stage; omit to stage every unstaged change"`
	Message string   `json:"message,omitempty" jsonschema:"the commit message: what the change does and why; required, except with amend, where leaving it out keeps the latest commit's"`
	Amend   bool     `json:"amend,omitempty" jsonschema:"replace the latest staged commit in place, as git commit --amend: it keeps its changes and takes the unstaged ones (those at or under files); use it to fix a commit the reviewer rejected, so the rejected version never lands"`
}

type diffArgs struct {
	Repo     string `json:"repo,omitempty" jsonschema:"in a session with several repositories, which one (its name, also its directory in the workspace); omit it when there is one, or when the paths or the commit say which"`
	CommitID string `json:"commit_id,omitempty" jsonschema:"a staged commit (its id or first 7 digits, or HEAD for the latest); omit for the unstaged changes"`
	Path     string `json:"path,omitempty" jsonschema:"only this file or directory (a workspace path)"`
}

type pushArgs struct {
	Repo     string `json:"repo,omitempty" jsonschema:"in a session with several repositories, which one (its name, also its directory in the workspace); omit it when there is one, or when the paths or the commit say which"`
	CommitID string `json:"commit_id,omitempty" jsonschema:"the staged commit to push (with the staged commits before it): its id, or HEAD (the latest, also when omitted), HEAD~1 (the one before)"`
	Target   string `json:"target,omitempty" jsonschema:"a target name from the worker's configuration; omit for the default target"`
	Reply    string `json:"reply,omitempty" jsonschema:"your answer to the reviewer's comments on your last push (what you changed, or why not): the reviewer reads it with this push; pushing again answers the comments"`
}

type discardArgs struct {
	Repo     string `json:"repo,omitempty" jsonschema:"in a session with several repositories, which one (its name, also its directory in the workspace); omit it when there is one, or when the paths or the commit say which"`
	CommitID string `json:"commit_id,omitempty" jsonschema:"the staged commit to drop; its changes become unstaged again. Omit it (and all) to drop every staged commit the reviewer rejected"`
	All      bool   `json:"all,omitempty" jsonschema:"drop every staged commit (their changes become unstaged again)"`
}

type pullArgs struct {
	Repo        string   `json:"repo,omitempty" jsonschema:"in a session with several repositories, which one (its name, also its directory in the workspace); omit it when there is one, or when the paths or the commit say which"`
	Source      string   `json:"source,omitempty" jsonschema:"a target name from the worker's configuration; omit for the default target"`
	Paths       []string `json:"paths,omitempty" jsonschema:"files or directories of the source to bring in; omit for everything"`
	Destination string   `json:"destination,omitempty" jsonschema:"a workspace directory to copy the files into, as new files of your own"`
}

// repoFor is the repository a git tool works on: the one named, the one
// with the staged commit, or the one the workspace paths are under.
func repoFor(s *session.Session, name, commit string, paths ...string) (*session.Repo, error) {
	if name == "" && commit != "" && len(s.Repos()) > 1 {
		if h, ok := s.RepoWithCommit(commit); ok {
			return h, nil
		}
	}
	return s.Repo(name, paths...)
}

type checkpointArgs struct {
	Name string `json:"name,omitempty" jsonschema:"a name for the checkpoint; default: checkpoint-N"`
}

type rollbackArgs struct {
	Name string `json:"name,omitempty" jsonschema:"the checkpoint to go back to; default: the latest"`
}

type noArgs struct{}

func gitTools() []Tool {
	return []Tool{
		define("git_status", "Show what is staged (commits waiting to be pushed, oldest first) and what is not staged yet "+
			"(files new, modified or deleted since the last staged commit). New files the repository's .gitignore excludes "+
			"are not changes, as in git: counted, and listed with ignored: true.", gitStatus),
		define("git_stage", "Make a commit of changes in the sandbox: all unstaged changes, or those at or under files; "+
			"with amend, replace the latest staged commit with it and them instead. "+
			"New files .gitignore excludes are left out unless files names them (as git add -f). "+
			"Nothing leaves the sandbox; git_push sends it to a reviewer. Returns the commit id.", gitStage),
		define("git_diff", "Show a staged commit's changes, or the unstaged changes, as a unified diff.", gitDiff),
		define("git_push", "Ask a human reviewer to approve pushing a staged commit to a target, and push it if approved. "+
			"It waits for the decision; if the reviewer takes long, it says the request is still pending, and calling git_push "+
			"again with the same commit waits on the same request. A rejection comes with the reviewer's reason; the reviewer may "+
			"also comment on lines of files: change what they ask, stage, and git_push again with reply to answer them.", gitPush),
		define("git_discard", "Drop a staged commit (or all of them; with neither, the commits the reviewer rejected). Its changes become unstaged again; no file changes.", gitDiscard),
		define("git_pull", "Bring files in from a target. From the target the sandbox was pulled from, it updates the sandbox to "+
			"the target's latest commit (your changes stay) and brings in more paths; from another target, or with "+
			"destination, it copies the files in as new files of your own.", gitPull),
	}
}

func checkpointTools() []Tool {
	return []Tool{
		define("checkpoint", "Record the whole workspace so you can come back to it with rollback. Cheap: take one before "+
			"anything you might want to undo.", takeCheckpoint),
		define("rollback", "Put the workspace back exactly as it was at a checkpoint (default: the latest). Checkpoints "+
			"taken after it are dropped; it stays, so you can roll back to it again.", rollback),
		define("list_checkpoints", "List the checkpoints, oldest first, with when they were taken and how many files "+
			"differ now.", listCheckpoints),
	}
}

func gitStatus(ctx context.Context, s *session.Session, a statusArgs, p Progress) (string, error) {
	out, err := gitStatusOf(ctx, s, a, p)
	if open := s.OpenCommentsText(); err == nil && open != "" {
		// Said where the worker looks before it pushes again.
		out = strings.TrimRight(out, "\n") + "\n\n" + open
	}
	return out, err
}

func gitStatusOf(_ context.Context, s *session.Session, a statusArgs, _ Progress) (string, error) {
	if len(s.Repos()) == 0 || a.Repo != "" {
		h, err := s.Repo(a.Repo)
		if err != nil {
			return "", err
		}
		return repoStatus(h, "", a.Ignored), nil
	}
	// Every repository, each under its name, then what no repository
	// takes.
	var parts []string
	for _, name := range s.Repos() {
		h, err := s.Repo(name)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("repository %s (%s/):\n%s", name, name, repoStatus(h, "  ", a.Ignored)))
	}
	if out := s.Outside(); len(out) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "outside every repository (%d; no git_stage takes these, move them under a repository's directory to commit them):", len(out))
		for i, c := range out {
			if i == statusMaxFiles {
				fmt.Fprintf(&b, "\n  [%d more not shown]", len(out)-i)
				break
			}
			fmt.Fprintf(&b, "\n  %s %s%s", c.Kind.Sign(), c.Path, changeSize(c))
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "\n"), nil
}

// repoStatus is one repository's status, each line after indent; paths
// are workspace paths. The ignored files are counted, or listed when
// ignored is true.
func repoStatus(h *session.Repo, indent string, ignored bool) string {
	st := h.Status()
	var b strings.Builder
	switch {
	case st.Base.IsZero():
		b.WriteString("base: none (nothing pulled yet: git_pull brings a target's files in; a push creates the branch, or rebases onto it)\n")
	case st.From != "":
		fmt.Fprintf(&b, "base: %s from %s (%s)\n", shortid.Hash(st.Base), st.From, st.Branch)
	default:
		fmt.Fprintf(&b, "base: %s\n", shortid.Hash(st.Base))
	}
	if len(st.Staged) == 0 {
		b.WriteString("staged: nothing\n")
	} else {
		b.WriteString("staged (oldest first):\n")
		for _, c := range st.Staged {
			rejected := ""
			if slices.Contains(st.Rejected, c.ID) {
				rejected = " rejected by the reviewer: drop it with git_discard, or, the latest, replace it with git_stage amend: true"
			}
			fmt.Fprintf(&b, "  %s %q (%s)%s\n", shortid.Hash(c.ID), subject(c.Message), fileCount(len(c.Files)), rejected)
		}
	}
	if len(st.Unstaged) == 0 {
		b.WriteString("unstaged: nothing\n")
	} else {
		fmt.Fprintf(&b, "unstaged (%d):\n", len(st.Unstaged))
		for i, c := range st.Unstaged {
			if i == statusMaxFiles {
				fmt.Fprintf(&b, "  [%d more not shown; git_diff path=... shows a directory]\n", len(st.Unstaged)-i)
				break
			}
			fmt.Fprintf(&b, "  %s %s%s\n", c.Kind.Sign(), h.Abs(c.Path), changeSize(c))
		}
	}
	writeIgnored(&b, h, st.Ignored, ignored)
	if st.Checkpoints > 0 {
		fmt.Fprintf(&b, "checkpoints: %d (latest %q, %d files changed since)\n", st.Checkpoints, st.Latest.Name, st.Latest.Changed)
	}
	out := strings.TrimRight(b.String(), "\n")
	if indent != "" {
		out = indent + strings.ReplaceAll(out, "\n", "\n"+indent)
	}
	return out
}

// writeIgnored lists the ignored untracked files (all: one line a file, or
// a directory the rules exclude as a whole), or counts them.
func writeIgnored(b *strings.Builder, h *session.Repo, ignored []staging.Ignored, all bool) {
	if len(ignored) == 0 {
		if all {
			b.WriteString("ignored: nothing\n")
		}
		return
	}
	if !all {
		fmt.Fprintf(b, "ignored: %s .gitignore excludes (not changes; git_status ignored=true lists them)\n", fileCount(len(ignored)))
		return
	}
	type line struct {
		path  string
		files int
		size  int64
	}
	var lines []*line
	dirs := map[string]*line{}
	for _, g := range ignored {
		if g.Dir == "" {
			lines = append(lines, &line{path: h.Abs(g.Path), files: 1, size: g.Size})
			continue
		}
		l := dirs[g.Dir]
		if l == nil {
			l = &line{path: h.Abs(g.Dir) + "/"}
			dirs[g.Dir] = l
			lines = append(lines, l)
		}
		l.files++
		l.size += g.Size
	}
	fmt.Fprintf(b, "ignored (%s .gitignore excludes; not changes: git_stage takes one only when files names it):\n", fileCount(len(ignored)))
	for i, l := range lines {
		if i == statusMaxFiles {
			fmt.Fprintf(b, "  [%d more not shown]\n", len(lines)-i)
			break
		}
		if strings.HasSuffix(l.path, "/") {
			fmt.Fprintf(b, "  ! %s (%s, %s)\n", l.path, fileCount(l.files), bytesize.Format(l.size))
		} else {
			fmt.Fprintf(b, "  ! %s (%s)\n", l.path, bytesize.Format(l.size))
		}
	}
}

func changeSize(c memfs.Change) string {
	if c.Kind == change.Delete {
		return ""
	}
	return " (" + bytesize.Format(c.Size) + ")"
}

func fileCount(n int) string { return plural(n, "file") }

func subject(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	if len(line) > 72 {
		line = line[:72] + "..."
	}
	return line
}

func gitStage(_ context.Context, s *session.Session, a stageArgs, _ Progress) (string, error) {
	h, err := repoFor(s, a.Repo, "", a.Files...)
	if err != nil {
		return "", err
	}
	files, err := h.Rel(a.Files)
	if err != nil {
		return "", err
	}
	var rep staging.StageReport
	var withdrawn []string
	if a.Amend {
		rep, withdrawn, err = h.Amend(files, a.Message)
	} else {
		rep, err = h.StageReport(files, a.Message)
	}
	if err != nil {
		return "", err
	}
	c := rep.Commit
	var b strings.Builder
	if len(withdrawn) > 0 {
		fmt.Fprintf(&b, "withdrew push request %s first: it asked to push the commit this replaces\n", strings.Join(withdrawn, ", "))
	}
	if a.Amend && len(c.Replaces) > 0 {
		fmt.Fprintf(&b, "replaced %s with ", shortid.Hash(c.Replaces[0]))
	}
	fmt.Fprintf(&b, "staged %s %q (%s%s):\n", shortid.Hash(c.ID), subject(c.Message), fileCount(len(c.Files)), inRepo(h))
	for i, f := range c.Files {
		if i == 50 {
			fmt.Fprintf(&b, "  [%d more]\n", len(c.Files)-i)
			break
		}
		fmt.Fprintf(&b, "  %s %s\n", f.Op.Sign(), f.Path)
	}
	if len(rep.Forced) > 0 {
		fmt.Fprintf(&b, "ignored by .gitignore, staged because files named them (as git add -f): %s\n", listOrNone(rep.Forced))
	}
	if len(rep.LeftOut) > 0 {
		fmt.Fprintf(&b, "left out %s .gitignore excludes, such as %s: name one in files to stage it anyway\n", fileCount(len(rep.LeftOut)), rep.LeftOut[0])
	}
	fmt.Fprintf(&b, "next: git_diff commit_id=%s to check it, git_push commit_id=%s to ask for approval", shortid.Hash(c.ID), shortid.Hash(c.ID))
	return b.String(), nil
}

// inRepo says which repository, in a session with several.
func inRepo(h *session.Repo) string {
	if h.Name() == "" {
		return ""
	}
	return ", repository " + h.Name() + ", paths relative to " + h.Name() + "/"
}

func gitDiff(_ context.Context, s *session.Session, a diffArgs, _ Progress) (string, error) {
	var paths []string
	if a.Path != "" {
		paths = []string{a.Path}
	}
	h, err := repoFor(s, a.Repo, a.CommitID, paths...)
	if err != nil {
		return "", err
	}
	rel, err := h.Rel(paths)
	if err != nil {
		return "", err
	}
	p, c, err := h.Diff(a.CommitID)
	if err != nil {
		return "", err
	}
	what := "unstaged changes"
	if c != nil {
		what = fmt.Sprintf("staged commit %s %q", shortid.Hash(c.ID), subject(c.Message))
	}
	if h.Name() != "" {
		what += " of repository " + h.Name() + " (paths relative to " + h.Name() + "/)"
	}
	if len(rel) > 0 && rel[0] != "." {
		prefix := strings.TrimSuffix(rel[0], "/")
		var keep []*staging.FilePatch
		for _, f := range p.Files {
			if f.Path == prefix || strings.HasPrefix(f.Path, prefix+"/") {
				keep = append(keep, f)
			}
		}
		p = &staging.Patch{Files: keep}
	}
	if len(p.Files) == 0 {
		return "(no changes in the " + what + ")", nil
	}
	w := textcap.New(diffMaxBytes)
	p.Format(w, false)
	return fmt.Sprintf("%s: %s\n%s", what, p.Stats(), w.Text("git_diff with path shows one file or directory")), nil
}

func gitDiscard(_ context.Context, s *session.Session, a discardArgs, _ Progress) (string, error) {
	h, err := repoFor(s, a.Repo, a.CommitID)
	if err != nil {
		return "", err
	}
	res, err := h.Discard(a.CommitID, a.All)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if len(res.Withdrawn) > 0 {
		fmt.Fprintf(&b, "withdrew push request %s first: it asked to push what this drops\n", strings.Join(res.Withdrawn, ", "))
	}
	switch {
	case a.All:
		fmt.Fprintf(&b, "dropped %d staged commits; their changes are unstaged again", res.Count)
		return b.String(), nil
	case res.Commit == nil:
		var names []string
		for _, c := range res.Rejected {
			names = append(names, fmt.Sprintf("%s %q", shortid.Hash(c.ID), subject(c.Message)))
		}
		fmt.Fprintf(&b, "dropped the staged commits the reviewer rejected: %s; unstaged again: %s", strings.Join(names, ", "), listOrNone(res.Unstaged))
	default:
		fmt.Fprintf(&b, "dropped %s %q; unstaged again: %s", shortid.Hash(res.Commit.ID), subject(res.Commit.Message), listOrNone(res.Unstaged))
	}
	if len(res.StillStaged) > 0 {
		fmt.Fprintf(&b, "\nstill staged, with later commits that change them too: %s", strings.Join(res.StillStaged, ", "))
	}
	for old, nu := range res.Rebuilt {
		fmt.Fprintf(&b, "\nlater commit %s is now %s", shortid.Hash(old), shortid.Hash(nu))
	}
	return b.String(), nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	s = shownAll(s)
	if len(s) > 20 {
		return strings.Join(s[:20], ", ") + fmt.Sprintf(" and %d more", len(s)-20)
	}
	return strings.Join(s, ", ")
}

func gitPull(ctx context.Context, s *session.Session, a pullArgs, _ Progress) (string, error) {
	var dest []string
	if a.Destination != "" {
		dest = []string{a.Destination}
	}
	h, err := repoFor(s, a.Repo, "", dest...)
	if err != nil {
		return "", err
	}
	if dest, err = h.Rel(dest); err != nil {
		return "", err
	}
	destination := ""
	if len(dest) > 0 {
		destination = dest[0]
	}
	res, err := h.Pull(ctx, a.Source, a.Paths, destination)
	if err != nil {
		return "", err
	}
	var msgs []string
	if len(res.Withdrawn) > 0 {
		msgs = append(msgs, fmt.Sprintf("withdrew push request %s first: the update rebuilds the commits it asked to push; git_push again for the new ones", strings.Join(res.Withdrawn, ", ")))
	}
	switch res.Kind {
	case session.Copied:
		msgs = append(msgs, fmt.Sprintf("copied %d files from %s (%s) as new files of yours", res.Files, res.From, shortid.Hash(res.Head)))
	case session.Seeded:
		msgs = append(msgs, fmt.Sprintf("pulled %d files from %s at %s; changes are now tracked against it", res.Files, res.From, shortid.Hash(res.Head)))
	case session.Updated:
		msgs = append(msgs, fmt.Sprintf("updated to %s at %s: %d files changed there came in (%s); your work is on top",
			res.From, shortid.Hash(res.Head), len(res.Updated), listOrNone(res.Updated)))
		for old, nu := range res.Rebuilt {
			msgs = append(msgs, fmt.Sprintf("staged commit %s is now %s", shortid.Hash(old), shortid.Hash(nu)))
		}
	case session.Current:
		msgs = append(msgs, fmt.Sprintf("%s is still at %s", res.From, shortid.Hash(res.Head)))
	}
	if res.Kind == session.Updated || res.Kind == session.Current {
		if res.More != nil {
			msgs = append(msgs, fmt.Sprintf("brought in %d more files", len(res.More)))
		}
		for _, r := range res.Refused {
			msgs = append(msgs, fmt.Sprintf("left out %s: %v", shown(r.Path), r.Err))
		}
		return strings.Join(msgs, "\n"), nil
	}
	return pullSummary(strings.Join(msgs, "\n"), res.Refused), nil
}

func pullSummary(head string, refused []memfs.Refused) string {
	var b strings.Builder
	b.WriteString(head)
	if len(refused) > 0 {
		fmt.Fprintf(&b, "\nleft out %d paths the sandbox's rules refuse:", len(refused))
		for i, r := range refused {
			if i == 20 {
				fmt.Fprintf(&b, "\n  [%d more]", len(refused)-i)
				break
			}
			fmt.Fprintf(&b, "\n  %s: %v", shown(r.Path), shortRefusal(r.Err))
		}
	}
	return b.String()
}

func shortRefusal(err error) string {
	var e *memfs.Error
	if errors.As(err, &e) && e.Rule != "" {
		return string(e.Rule)
	}
	return err.Error()
}

func gitPush(ctx context.Context, s *session.Session, a pushArgs, p Progress) (string, error) {
	h, err := repoFor(s, a.Repo, a.CommitID)
	if err != nil {
		return "", err
	}
	// Without a commit id, or with HEAD (HEAD~1...), the push says which
	// staged commit that is before anything else.
	var which string
	named := a.CommitID
	if named == "" {
		named = "HEAD"
	}
	if c, err := h.Lookup(named); err == nil && !strings.HasPrefix(c.ID.String(), strings.ToLower(strings.TrimSpace(named))) {
		which = fmt.Sprintf("%s is staged commit %s %q", strings.ToUpper(named), shortid.Hash(c.ID), subject(c.Message))
		if before := stagedBefore(h, c); before > 0 {
			which += fmt.Sprintf(" (it goes with the %s staged before it)", plural(before, "commit"))
		}
		a.CommitID = c.ID.String()
	}
	res, err := h.PushReply(ctx, a.CommitID, a.Target, a.Reply, p)
	if err != nil {
		if which != "" {
			return "", fmt.Errorf("%s: %w", which, err)
		}
		return "", err
	}
	lines := res.Notes
	if which != "" {
		lines = append([]string{which + ":"}, lines...)
	}
	switch {
	case res.Pending:
		lines = append(lines, fmt.Sprintf("the push of %s to %s (%s) is still waiting for a reviewer (request %s). "+
			"Call git_push commit_id=%s again to keep waiting: the reviewer is not asked twice. A reviewer answers with `airlock review` in a terminal.",
			shortid.Hash(res.Commit), res.Target, res.Branch, res.RequestID, shortid.Hash(res.Commit)))
	case res.Already:
		lines = append(lines, fmt.Sprintf("%s (%s) is already at %s: nothing to push", res.Target, res.Branch, shortid.Hash(res.Commit)))
	case res.Landed != nil:
		lines = append(lines, landedLines(res)...)
	case res.Picked != nil:
		lines = append(lines, fmt.Sprintf("pushed %s to %s (%s) with only the files the reviewer picked: %s; the other changes are unstaged in the sandbox",
			shortid.Hash(res.Commit), res.Target, res.Branch, strings.Join(res.Picked, ", ")))
	default:
		lines = append(lines, fmt.Sprintf("pushed %s to %s (%s): %s, +%d -%d", shortid.Hash(res.Commit), res.Target, res.Branch,
			fileCount(res.Files), res.Added, res.Deleted))
	}
	if res.Worktree != nil {
		lines = append(lines, "note: "+res.Worktree.Error())
	}
	if res.Comments != "" {
		lines = append(lines, "", res.Comments)
	}
	return strings.Join(lines, "\n"), nil
}

// stagedBefore counts the staged commits before c: a push of c sends them
// too.
func stagedBefore(h *session.Repo, c *staging.Commit) int {
	for i, sc := range h.Status().Staged {
		if sc.ID == c.ID {
			return i
		}
	}
	return 0
}

func takeCheckpoint(_ context.Context, s *session.Session, a checkpointArgs, _ Progress) (string, error) {
	info, err := s.Checkpoint(a.Name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("checkpoint %q taken; rollback name=%q comes back to it", info.Name, info.Name), nil
}

func rollback(_ context.Context, s *session.Session, a rollbackArgs, _ Progress) (string, error) {
	res, err := s.Rollback(a.Name)
	if err != nil {
		return "", err
	}
	if !res.Replayed {
		return fmt.Sprintf("rolled back to %q (taken %s); the workspace is exactly as it was then", res.Name, res.Time.Format(time.TimeOnly)), nil
	}
	out := fmt.Sprintf("rolled back to %q (taken %s): the base moved since (a pull or a push), so the checkpoint's own changes were replayed onto the current base, which keeps what came from upstream", res.Name, res.Time.Format(time.TimeOnly))
	if len(res.Conflicts) > 0 {
		out += fmt.Sprintf("\nchanged both in the checkpoint and upstream, so kept as upstream has them: %s", listOrNone(res.Conflicts))
	}
	return out, nil
}

func listCheckpoints(_ context.Context, s *session.Session, _ noArgs, _ Progress) (string, error) {
	cps := s.Checkpoints()
	if len(cps) == 0 {
		return "(no checkpoints; take one with checkpoint)", nil
	}
	var b strings.Builder
	for _, cp := range cps {
		fmt.Fprintf(&b, "%s  %s  %d files changed since\n", cp.Name, cp.Time.Format(time.TimeOnly), cp.Changed)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
