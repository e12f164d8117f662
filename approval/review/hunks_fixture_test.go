package review_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/gittest"
)

// hostileName is a file name a worker may choose: a screen clear, a
// right-to-left override, a newline.
const hostileName = "notes\x1b[2J\u202Etxt.sh\nfake"

// hunkRequest is a real two-commit push made in a real repository, as a
// server sends it with each commit's own files:
//
//	commit 1 "Add the limits" (its message hostile): a.go in two hunks, and
//	  a new file of a hostile name and content;
//	commit 2 "Document the limits": README.md, and a third hunk of a.go.
func hunkRequest(t *testing.T) *approval.Request {
	t.Helper()
	dir := t.TempDir()
	// Fixed dates: the commits' ids are the same every run, for the
	// golden screens.
	env := append(gittest.Env(), "GIT_AUTHOR_DATE=2026-11-25T02:00:00Z", "GIT_COMMITTER_DATE=2026-11-25T02:00:00Z")
	var base []string
	for i := 1; i <= 30; i++ {
		base = append(base, fmt.Sprintf("line %d", i))
	}
	gittest.InitRepo(t, env, dir, "base", map[string]string{
		"a.go":      strings.Join(base, "\n") + "\n",
		"README.md": "# Limits\n\nNothing yet.\n",
	})
	write := func(path, content string) {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(changes map[int][]string) string {
		var out []string
		for i, l := range base {
			if c, ok := changes[i+1]; ok {
				out = append(out, c...)
				continue
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n") + "\n"
	}
	first := map[int][]string{3: {"line 3 changed"}, 20: {"line 20 changed", "line 20b added\x1b[8m hidden"}}
	write("a.go", edit(first))
	write(hostileName, "echo \x1b]52;c;ZXZpbA==\x07 hi\n")
	gittest.Run(t, env, dir, nil, "add", "-A")
	gittest.Run(t, env, dir, nil, "commit", "-qm", "Add the limits\x1b[1A\x1b[2K\u202E\n\nWith a body.\n")
	first[29] = []string{"line 29 changed"}
	write("a.go", edit(first))
	write("README.md", "# Limits\n\nThey are documented.\n")
	gittest.Run(t, env, dir, nil, "commit", "-qam", "Document the limits")

	r := &approval.Request{
		ID: "req-hunks", Worker: "fixer", Target: "local:/srv/app", Describe: "local:/srv/app",
		Ref: "refs/heads/limits", Time: time.Date(2026, 11, 25, 2, 30, 0, 0, time.UTC),
		Old: hash(t, dir, "main~2"), New: hash(t, dir, "main"), Tree: hash(t, dir, "main^{tree}"),
		Pickable: true,
		Diff:     gittest.Run(t, env, dir, nil, "diff", "--no-color", "main~2", "main"),
	}
	for _, rev := range []string{"main~1", "main"} {
		r.Commits = append(r.Commits, approval.CommitInfo{
			ID:      hash(t, dir, rev),
			Message: gittest.Run(t, env, dir, nil, "log", "-1", "--format=%B", rev),
			Files:   fileDiffs(t, dir, rev),
		})
	}
	r.Files = []approval.FileChange{
		{Path: "README.md", Op: change.Update, Size: 34, OldMode: filemode.Regular, NewMode: filemode.Regular, Added: 1, Deleted: 1},
		{Path: "a.go", Op: change.Update, Size: 250, OldMode: filemode.Regular, NewMode: filemode.Regular, Added: 4, Deleted: 3},
		{Path: hostileName, Op: change.Create, Size: 24, NewMode: filemode.Regular, Added: 1},
	}
	r.Added, r.Deleted = 6, 4
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, nil)
	return r
}

func hash(t *testing.T, dir, rev string) plumbing.Hash {
	t.Helper()
	return plumbing.NewHash(strings.TrimSpace(gittest.Git(t, dir, "rev-parse", rev)))
}

// fileDiffs splits a commit's own diff (git show) into its files' headers
// and hunks, named by their paths as git lists them.
func fileDiffs(t *testing.T, dir, rev string) []approval.FileDiff {
	t.Helper()
	names := strings.Split(strings.TrimSuffix(gittest.Git(t, dir, "show", "--format=", "--name-only", "-z", rev), "\x00"), "\x00")
	show := gittest.Git(t, dir, "show", "--format=", "--no-color", "-p", rev)
	var out []approval.FileDiff
	for _, sec := range strings.SplitAfter(show, "\ndiff --git ") {
		if len(out) > 0 {
			sec = "diff --git " + sec
		}
		sec = strings.TrimSuffix(sec, "diff --git ")
		sec = strings.TrimSuffix(sec, "\n") + "\n"
		fd := approval.FileDiff{Path: names[len(out)], Op: change.Update}
		if strings.Contains(sec, "\nnew file mode") {
			fd.Op = change.Create
		}
		parts := strings.SplitAfter(sec, "\n@@")
		fd.Header = strings.TrimSuffix(parts[0], "@@")
		for i := 1; i < len(parts); i++ {
			h := "@@" + strings.TrimSuffix(parts[i], "@@")
			fd.Hunks = append(fd.Hunks, h)
		}
		out = append(out, fd)
	}
	if len(out) != len(names) {
		t.Fatalf("%s: %d file diffs for %d names", rev, len(out), len(names))
	}
	return out
}
