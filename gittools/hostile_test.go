package gittools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/worker"
)

// hostileUpstream makes a repository whose main branch holds entries git
// itself refuses to check out: "..", a .git directory with a config that
// names an fsmonitor command and a hook, symlinks out of the tree, and a
// directory that climbs out through "..". It returns the repository and the
// file the planted commands would create.
func hostileUpstream(t *testing.T) (repo, marker string) {
	t.Helper()
	repo = t.TempDir()
	marker = filepath.Join(t.TempDir(), "PWNED")
	git(t, repo, "init", "-q", "-b", "main", ".")
	blob := func(content string) string {
		return strings.TrimSpace(gitIn(t, repo, content, "hash-object", "-w", "--stdin"))
	}
	tree := func(entries ...string) string {
		return strings.TrimSpace(gitIn(t, repo, strings.Join(entries, "\n")+"\n", "mktree"))
	}
	cmd := "touch " + marker
	hooks := tree("100755 blob " + blob("#!/bin/sh\n"+cmd+"\n") + "\tpost-checkout")
	dotgit := tree(
		"100644 blob "+blob("[core]\n\tfsmonitor = "+cmd+"\n\thooksPath = .git/hooks\n")+"\tconfig",
		"040000 tree "+hooks+"\thooks")
	climb := tree("040000 tree " + tree("100644 blob "+blob("outside\n")+"\toutside.txt") + "\t..")
	docs := tree("040000 tree " + climb + "\t..")
	root := tree(
		"100644 blob "+blob("# Upstream\n")+"\tREADME.md",
		"100644 blob "+blob("dotdot\n")+"\t..",
		"040000 tree "+dotgit+"\t.git",
		"040000 tree "+docs+"\tdocs",
		"120000 blob "+blob("/etc/passwd")+"\tetc-passwd",
		"120000 blob "+blob("../../..")+"\tup",
	)
	commit := strings.TrimSpace(gitIn(t, repo, "hostile\n", "commit-tree", root))
	git(t, repo, "update-ref", "refs/heads/main", commit)
	return repo, marker
}

// gitIn is git with stdin.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Owner", "GIT_AUTHOR_EMAIL=owner@example.com", "GIT_COMMITTER_NAME=Owner", "GIT_COMMITTER_EMAIL=owner@example.com")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// hostileSession pulls the hostile upstream's main and pushes to branch of
// target (auto-approved), after staging one honest file.
func hostileSession(t *testing.T, upstream, target, branch string, others map[string]*worker.TargetSpec) (*harness, *[]*approval.Request) {
	t.Helper()
	if others == nil {
		others = map[string]*worker.TargetSpec{}
	}
	w := &worker.Worker{
		Name: "hostile", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: target, Branch: branch},
		Targets:       others,
		AutoPull:      []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local", Path: upstream, Branch: "main"}}},
	}
	var seen []*approval.Request
	h := openSession(t, w, approval.Policy{}, func(r *approval.Request) approval.Decision {
		seen = append(seen, r)
		return approval.Decision{Verdict: approval.Approve}
	})
	h.call("write_file", map[string]any{"path": "notes.md", "content": "honest\n"})
	h.call("git_stage", map[string]any{"message": "Add notes"})
	return h, &seen
}

// assertNothingEscaped checks that no planted entry reached the disk.
func assertNothingEscaped(t *testing.T, repo, marker, gitConfigBefore string) {
	t.Helper()
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command planted in the hostile tree ran")
	}
	for _, p := range []string{filepath.Join(repo, "..", "outside.txt"), filepath.Join(repo, "..", ".."), filepath.Join(repo, "etc-passwd"), filepath.Join(repo, "up"), filepath.Join(repo, "docs")} {
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() || err == nil && strings.HasSuffix(p, "docs") {
			t.Errorf("%s was written", p)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(got) != gitConfigBefore {
		t.Errorf(".git/config was changed:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", "post-checkout")); err == nil {
		t.Error("a hook was planted")
	}
}

// TestHostileBaseNeverLeaves is the door attack: a worker pulls a tree
// holding what git refuses, stages one honest file and pushes to an
// unborn, checked-out branch. Nothing lands outside the repository or in
// .git, the reviewer sees every file the push writes and is told what was
// left out, and what lands passes git fsck --strict.
func TestHostileBaseNeverLeaves(t *testing.T) {
	t.Run("orphan branch of the same repository", func(t *testing.T) {
		upstream, marker := hostileUpstream(t)
		git(t, upstream, "symbolic-ref", "HEAD", "refs/heads/reports") // git switch --orphan, without a checkout of main first
		before, _ := os.ReadFile(filepath.Join(upstream, ".git", "config"))
		h, seen := hostileSession(t, upstream, upstream, "reports", nil)
		mustContain(t, "git_push", h.call("git_push", nil), "pushed")
		assertNothingEscaped(t, upstream, marker, string(before))
		if files := git(t, upstream, "ls-tree", "-r", "--name-only", "reports"); files != "README.md\nnotes.md\n" {
			t.Errorf("reports holds:\n%s", files)
		}
		for _, f := range []string{"README.md", "notes.md"} {
			if _, err := os.Stat(filepath.Join(upstream, f)); err != nil {
				t.Errorf("the working tree lacks %s: %v", f, err)
			}
		}
		if len(*seen) != 1 {
			t.Fatalf("%d requests", len(*seen))
		}
		req := (*seen)[0]
		var shown []string
		for _, f := range req.Files {
			shown = append(shown, f.Path)
		}
		if strings.Join(shown, ",") != "README.md,notes.md" {
			t.Errorf("the reviewer was shown %v, not every file the push writes", shown)
		}
		dropped := false
		for _, f := range req.Flags {
			if f.Code == approval.FlagDropped && f.Severity == approval.High && strings.Contains(f.Message, ".git") {
				dropped = true
			}
		}
		if !dropped {
			t.Errorf("the reviewer was not told what the commit leaves out: %+v", req.Flags)
		}
		clone := t.TempDir()
		// Only the pushed commit: its parent is the upstream's own.
		git(t, clone, "clone", "-q", "--depth", "1", "-b", "reports", "file://"+upstream, ".")
		git(t, clone, "fsck", "--strict")
	})
	t.Run("fresh repository", func(t *testing.T) {
		// Files pulled from another repository than the target come in as
		// the worker's own: the workspace refused the hostile entries, so
		// the commit is a clean root commit.
		upstream, marker := hostileUpstream(t)
		target := t.TempDir()
		git(t, target, "init", "-q", "-b", "main", ".")
		before, _ := os.ReadFile(filepath.Join(target, ".git", "config"))
		h, seen := hostileSession(t, upstream, target, "main", nil)
		mustContain(t, "git_push", h.call("git_push", nil), "pushed")
		assertNothingEscaped(t, target, marker, string(before))
		if files := git(t, target, "ls-tree", "-r", "--name-only", "main"); files != "README.md\nnotes.md\n" {
			t.Errorf("main holds:\n%s", files)
		}
		if n := len((*seen)[0].Files); n != 2 {
			t.Errorf("the reviewer was shown %d files, not the 2 the push writes", n)
		}
		git(t, target, "fsck", "--strict")
	})
	t.Run("new branch of another repository", func(t *testing.T) {
		// The staged commit's parent is the hostile commit, which the
		// other repository lacks: the push would carry its tree, so it
		// is refused, naming the entries, and nothing moves.
		upstream, marker := hostileUpstream(t)
		bare := t.TempDir()
		git(t, bare, "init", "-q", "--bare", ".")
		h, _ := hostileSession(t, upstream, upstream, "main", map[string]*worker.TargetSpec{
			"backup": {Type: "local-bare", Path: bare, Branch: "copy"},
		})
		_, err := h.try("git_push", map[string]any{"target": "backup"})
		mustContain(t, "the refused push", errString(err), "tree refused", ".git", "etc-passwd", "nothing was pushed")
		if _, err := os.Stat(marker); err == nil {
			t.Error("a planted command ran")
		}
		if out := git(t, bare, "for-each-ref"); out != "" {
			t.Errorf("refs moved:\n%s", out)
		}
		if out := git(t, bare, "count-objects"); !strings.HasPrefix(out, "0 objects") {
			t.Errorf("objects reached the repository: %s", out)
		}
	})
}
