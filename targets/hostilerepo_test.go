package targets_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/targets"
)

// TestNoProgramAPromisorsPromisorNames: a source that is a partial clone
// names as its promisor remote another partial clone (file://), whose own
// config names a remote.origin.uploadpack. airlock's fetch of the missing
// blobs runs git-upload-pack in that second repository, which git runs
// with that repository's config alone (a local transport drops
// GIT_CONFIG_COUNT); its pack-objects, lacking the blobs too, would fetch
// them lazily from its own promisor with its own uploadpack. Nothing the
// second repository names runs: the pull fails, saying the objects are
// missing, or works through git's own programs.
func TestNoProgramAPromisorsPromisorNames(t *testing.T) {
	c := &canaries{dir: t.TempDir()}
	c.marker = filepath.Join(t.TempDir(), "ran")
	upstream := t.TempDir()
	run(t, upstream, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, upstream, map[string]string{"a.txt": "a\n", "d/c.txt": "c\n"})
	run(t, upstream, nil, nil, "add", "-A")
	run(t, upstream, nil, nil, "commit", "-qm", "base")
	for _, k := range []string{"uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"} {
		run(t, upstream, nil, nil, "config", k, "true")
	}
	tmp := t.TempDir()
	evil, src := filepath.Join(tmp, "evil.git"), filepath.Join(tmp, "src.git")
	run(t, tmp, nil, nil, "clone", "-q", "--bare", "--filter=blob:none", "file://"+upstream, evil)
	run(t, tmp, nil, nil, "clone", "-q", "--bare", "--filter=blob:none", "file://"+upstream, src)
	for _, k := range []string{"uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"} {
		run(t, evil, nil, nil, "config", k, "true")
	}
	run(t, evil, nil, nil, "config", "remote.origin.uploadpack", c.script(t, "evil remote.origin.uploadpack", "git-upload-pack"))
	run(t, evil, nil, nil, "config", "core.sshCommand", c.script(t, "evil core.sshCommand", ""))
	run(t, src, nil, nil, "config", "remote.origin.url", "file://"+evil)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocalBare(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head, err := tgt.Fetch(ctx, "refs/heads/main", nil, sb.store)
	if err == nil {
		if _, err = sb.area.SeedFrom(head, nil); err == nil {
			_, err = sb.ws.ReadFile("d/c.txt")
		}
	}
	t.Logf("the pull: %v", err)
	if ran, _ := os.ReadFile(c.marker); len(ran) > 0 {
		t.Errorf("git ran what the promisor's promisor names:\n%s", ran)
	}
}

// TestNoProgramASubmoduleNames: a working-tree target holds a submodule,
// checked out, whose own config (which airlock's listing of the target's
// config never sees) names a clean filter for its files, one of them
// stat-dirty. A push to the checked-out branch checks the working tree
// (git status), which looks into a submodule by running git there: the
// filter must not run.
func TestNoProgramASubmoduleNames(t *testing.T) {
	c := &canaries{dir: t.TempDir()}
	c.marker = filepath.Join(t.TempDir(), "ran")
	tmp := t.TempDir()
	sub, wt := filepath.Join(tmp, "sub"), filepath.Join(tmp, "wt")
	run(t, tmp, nil, nil, "init", "-q", "-b", "main", sub)
	writeFiles(t, sub, map[string]string{"f.txt": "f\n", ".gitattributes": "*.txt filter=x\n"})
	run(t, sub, nil, nil, "add", "-A")
	run(t, sub, nil, nil, "commit", "-qm", "sub")
	run(t, tmp, nil, nil, "init", "-q", "-b", "main", wt)
	writeFiles(t, wt, map[string]string{"a.txt": "a\n"})
	run(t, wt, nil, nil, "add", "-A")
	run(t, wt, nil, nil, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub")
	run(t, wt, nil, nil, "commit", "-qm", "base")
	// The canary passes the file through, as a clean filter would.
	canary := c.script(t, "submodule filter.x.clean", "cat")
	run(t, filepath.Join(wt, "sub"), nil, nil, "config", "filter.x.clean", canary)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(wt, "sub", "f.txt"), old, old); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocal(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile("new.txt", []byte("from the worker\n"), 0o644)
	id, err := sb.push(t, tgt, "refs/heads/main", head)
	if now, _ := tgt.Head(ctx, "refs/heads/main"); err != nil || now != id {
		t.Errorf("the push: %v (main at %s, pushed %s)", err, now, id)
	}
	if ran, _ := os.ReadFile(c.marker); len(ran) > 0 {
		t.Errorf("git ran what the submodule's config names:\n%s", strings.TrimSpace(string(ran)))
	}
}

// TestBareTargetWritesNoWorkTree: a "local-bare" target whose config says
// it is not bare after all (core.bare false, its git directory its own
// work tree, whose index matches) and that a push to its current branch
// updates that work tree (receive.denyCurrentBranch updateInstead). A
// worker's approved file would be written into the git directory itself,
// beside its config and hooks. airlock's push writes no file there: git
// refuses to update the current branch of a repository it thinks has a
// work tree (a push to a checked-out branch is airlock's own work, done
// by the working-tree target).
func TestBareTargetWritesNoWorkTree(t *testing.T) {
	tmp := t.TempDir()
	up, bare := filepath.Join(tmp, "up"), filepath.Join(tmp, "bare.git")
	run(t, tmp, nil, nil, "init", "-q", "-b", "main", up)
	run(t, tmp, nil, nil, "init", "-q", "--bare", "-b", "main", bare)
	desc, err := os.ReadFile(filepath.Join(bare, "description"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, up, map[string]string{"description": string(desc)})
	run(t, up, nil, nil, "add", "-A")
	run(t, up, nil, nil, "commit", "-qm", "base")
	run(t, up, nil, nil, "push", "-q", bare, "main")
	run(t, bare, nil, nil, "config", "core.bare", "false")
	run(t, bare, nil, nil, "config", "receive.denyCurrentBranch", "updateInstead")
	run(t, tmp, nil, nil, "--git-dir="+bare, "--work-tree="+bare, "read-tree", "main")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocalBare(ctx, bare)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile("new.txt", []byte("from the worker\n"), 0o644)
	id, err := sb.push(t, tgt, "refs/heads/main", head)
	now, _ := tgt.Head(ctx, "refs/heads/main")
	t.Logf("the push: %v", err)
	if err == nil || !strings.Contains(err.Error(), "git config core.bare true") || now != head {
		t.Errorf("the push: %v (main at %s, pushed %s); want a refusal saying the repository is not bare, main at %s", err, now, id, head)
	}
	if _, err := os.Stat(filepath.Join(bare, "new.txt")); err == nil {
		t.Errorf("the push wrote the worker's new.txt into the git directory %s", bare)
	}
}

// TestPullIgnoresReplaceRefsAndGrafts: a source whose replace refs swap
// a file's blob, its commit and its tree for others, and whose
// info/grafts rewrites the commit's parents: airlock reads the objects
// as they are (what a push of them would send, and what the reviewer's
// diff compares against), never what git's replacements show.
func TestPullIgnoresReplaceRefsAndGrafts(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	run(t, tmp, nil, nil, "init", "-q", "-b", "main", src)
	writeFiles(t, src, map[string]string{"a.txt": "shown\n"})
	run(t, src, nil, nil, "add", "-A")
	run(t, src, nil, nil, "commit", "-qm", "first")
	first := strings.TrimSpace(run(t, src, nil, nil, "rev-parse", "HEAD"))
	writeFiles(t, src, map[string]string{"a.txt": "real\n"})
	run(t, src, nil, nil, "commit", "-qam", "second")
	real := strings.TrimSpace(run(t, src, nil, nil, "rev-parse", "HEAD:a.txt"))
	shown := strings.TrimSpace(run(t, src, nil, nil, "rev-parse", first+":a.txt"))
	head := strings.TrimSpace(run(t, src, nil, nil, "rev-parse", "HEAD"))
	bareDir := filepath.Join(tmp, "src.git")
	run(t, tmp, nil, nil, "clone", "-q", "--bare", "--no-local", src, bareDir)
	for d, gitDir := range map[string]string{src: filepath.Join(src, ".git"), bareDir: bareDir} {
		run(t, d, nil, nil, "replace", real, shown)
		run(t, d, nil, nil, "replace", head+"^{tree}", first+"^{tree}")
		// head has no parents, as git reads it now.
		os.MkdirAll(filepath.Join(gitDir, "info"), 0o755)
		if err := os.WriteFile(filepath.Join(gitDir, "info", "grafts"), []byte(head+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := run(t, src, nil, nil, "cat-file", "-p", "HEAD:a.txt"); got != "shown\n" {
		t.Fatalf("git itself reads a.txt as %q; the replacement is not in effect", got)
	}
	for _, bare := range []bool{false, true} {
		dir, open := src, targets.OpenLocal
		if bare {
			dir, open = bareDir, targets.OpenLocalBare
		}
		// The working tree holds neither: only the objects say.
		if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("other\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tgt, err := open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		sb := newSandbox(t, tgt)
		sb.pull(t, tgt, "refs/heads/main")
		if got, err := sb.ws.ReadFile("a.txt"); err != nil || string(got) != "real\n" {
			t.Errorf("bare %v: a.txt read %q (%v); want the committed %q, not its replacement", bare, got, err, "real\n")
		}
		tgt.Close()
	}
}

// TestNoProgramTheUsersConfigNamesForAWorkersAttributes: the user's own
// git config defines a filter, a diff and a merge driver (as git-lfs's
// install does); a worker's push to a working tree's checked-out branch
// brings a .gitattributes that gives every path to them. Neither that
// push's writing of the files and index nor the next push's check of the
// working tree runs any of them.
func TestNoProgramTheUsersConfigNamesForAWorkersAttributes(t *testing.T) {
	c := &canaries{dir: t.TempDir()}
	c.marker = filepath.Join(t.TempDir(), "ran")
	global := filepath.Join(t.TempDir(), "gitconfig")
	var kv [][2]string
	for _, k := range []string{"filter.g.clean", "filter.g.smudge", "filter.g.process", "diff.g.textconv", "diff.g.command", "merge.g.driver"} {
		kv = append(kv, [2]string{k, c.script(t, "user config "+k, "cat")})
	}
	if err := os.WriteFile(global, []byte(configText(kv)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	wt := t.TempDir()
	run(t, wt, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, wt, map[string]string{"a.txt": "a\n"})
	run(t, wt, nil, nil, "add", "-A")
	run(t, wt, nil, nil, "commit", "-qm", "base")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocal(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile(".gitattributes", []byte("* filter=g diff=g merge=g\n"), 0o644)
	sb.ws.WriteFile("a.txt", []byte("a, changed\n"), 0o644)
	first, err := sb.push(t, tgt, "refs/heads/main", head)
	if err != nil {
		t.Fatalf("the first push: %v", err)
	}
	// The file a stat-dirty copy of itself, so that git looks inside.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(wt, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	sb.ws.WriteFile("a.txt", []byte("a, again\n"), 0o644)
	second, err := sb.push(t, tgt, "refs/heads/main", first)
	if now, _ := tgt.Head(ctx, "refs/heads/main"); err != nil || now != second {
		t.Errorf("the second push: %v (main at %s, pushed %s)", err, now, second)
	}
	if data, err := os.ReadFile(filepath.Join(wt, "a.txt")); err != nil || string(data) != "a, again\n" {
		t.Errorf("a.txt holds %q (%v)", data, err)
	}
	if ran, _ := os.ReadFile(c.marker); len(ran) > 0 {
		t.Errorf("git ran what the user's config names for the worker's attributes:\n%s", strings.TrimSpace(string(ran)))
	}
}

// TestPushWritesNoDirectoryTheRepositoryCallsAWorktree: a working-tree
// target's git directory names a linked worktree with the pushed branch
// checked out (.git/worktrees/x: HEAD, gitdir, commondir) at a directory
// that is not one: its .git does not name that entry back (it is another
// repository's).
// git worktree list reports it all the same. A push to the branch is
// refused, saying so, and writes no file there.
func TestPushWritesNoDirectoryTheRepositoryCallsAWorktree(t *testing.T) {
	tmp := t.TempDir()
	wt, victim := filepath.Join(tmp, "wt"), filepath.Join(tmp, "victim")
	run(t, tmp, nil, nil, "init", "-q", "-b", "main", wt)
	writeFiles(t, wt, map[string]string{"a.txt": "a\n"})
	run(t, wt, nil, nil, "add", "-A")
	run(t, wt, nil, nil, "commit", "-qm", "base")
	run(t, wt, nil, nil, "checkout", "-qb", "other")
	// The directory is a repository of its own (another project of the
	// user's), whose .git names no worktree of wt's.
	run(t, tmp, nil, nil, "init", "-q", victim)
	admin := filepath.Join(wt, ".git", "worktrees", "x")
	if err := os.MkdirAll(admin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"HEAD": "ref: refs/heads/main\n", "gitdir": filepath.Join(victim, ".git") + "\n", "commondir": "../..\n"} {
		if err := os.WriteFile(filepath.Join(admin, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := run(t, wt, nil, nil, "worktree", "list", "--porcelain"); !strings.Contains(out, "worktree "+victim) {
		t.Fatalf("git does not list %s as a worktree:\n%s", victim, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocal(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile("new.txt", []byte("from the worker\n"), 0o644)
	id, err := sb.push(t, tgt, "refs/heads/main", head)
	now, _ := tgt.Head(ctx, "refs/heads/main")
	if !errors.Is(err, targets.ErrNotOwnWorktree) || now != head {
		t.Errorf("the push: %v (main at %s, pushed %s); want %v, main at %s", err, now, id, targets.ErrNotOwnWorktree, head)
	}
	if es := mustReadDir(t, victim); len(es) > 1 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("the push wrote into %s, which only the repository's worktrees/x calls its worktree: %v", victim, names)
	}
}

// TestNoProgramAConditionalIncludeNames: a working-tree target's config
// includes, on conditions git evaluates against the repository itself
// (the branch checked out, a remote's URL), files naming a clean filter
// that its info/attributes gives every path. A push to the checked-out
// branch, whose check of the working tree hashes a stat-dirty file, runs
// neither (held: git config --list evaluates both conditions as the
// status does).
func TestNoProgramAConditionalIncludeNames(t *testing.T) {
	c := &canaries{dir: t.TempDir()}
	c.marker = filepath.Join(t.TempDir(), "ran")
	wt := t.TempDir()
	run(t, wt, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, wt, map[string]string{"a.txt": "a\n"})
	run(t, wt, nil, nil, "add", "-A")
	run(t, wt, nil, nil, "commit", "-qm", "base")
	gitDir := filepath.Join(wt, ".git")
	for name, kv := range map[string][][2]string{
		"branch.conf": {{"filter.onbranch.clean", c.script(t, "onbranch filter", "cat")}},
		"remote.conf": {{"filter.hasconfig.clean", c.script(t, "hasconfig filter", "cat")}},
	} {
		appendFile(t, filepath.Join(gitDir, name), configText(kv))
	}
	appendFile(t, filepath.Join(gitDir, "config"), "[remote \"o\"]\n\turl = https://example.com/r\n"+
		"[includeIf \"onbranch:main\"]\n\tpath = branch.conf\n"+
		"[includeIf \"hasconfig:remote.*.url:https://example.com/**\"]\n\tpath = remote.conf\n")
	os.MkdirAll(filepath.Join(gitDir, "info"), 0o755)
	appendFile(t, filepath.Join(gitDir, "info", "attributes"), "a.txt filter=onbranch\nnew.txt filter=hasconfig\n")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(wt, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocal(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile("new.txt", []byte("from the worker\n"), 0o644)
	id, err := sb.push(t, tgt, "refs/heads/main", head)
	if now, _ := tgt.Head(ctx, "refs/heads/main"); err != nil || now != id {
		t.Errorf("the push: %v (main at %s, pushed %s)", err, now, id)
	}
	if ran, _ := os.ReadFile(c.marker); len(ran) > 0 {
		t.Errorf("git ran what a conditional include names:\n%s", strings.TrimSpace(string(ran)))
	}
}

// TestPushWritesNothingThroughALinkedStateDirectory: a working-tree
// target's git directory holds "airlock", where a push keeps its lock,
// journal and temporary files, as a symlink to another directory. A push
// to the checked-out branch is refused, saying so, as is the next open
// (whose recovery takes the lock), and nothing is written there.
func TestPushWritesNothingThroughALinkedStateDirectory(t *testing.T) {
	tmp := t.TempDir()
	wt, elsewhere := filepath.Join(tmp, "wt"), filepath.Join(tmp, "elsewhere")
	run(t, tmp, nil, nil, "init", "-q", "-b", "main", wt)
	writeFiles(t, wt, map[string]string{"a.txt": "a\n"})
	run(t, wt, nil, nil, "add", "-A")
	run(t, wt, nil, nil, "commit", "-qm", "base")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocal(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	if err := os.RemoveAll(filepath.Join(wt, ".git", "airlock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(wt, ".git", "airlock")); err != nil {
		t.Fatal(err)
	}
	sb.ws.WriteFile("new.txt", []byte("from the worker\n"), 0o644)
	id, err := sb.push(t, tgt, "refs/heads/main", head)
	now, _ := tgt.Head(ctx, "refs/heads/main")
	if !errors.Is(err, targets.ErrLinkedState) || now != head {
		t.Errorf("the push: %v (main at %s, pushed %s); want %v, main at %s", err, now, id, targets.ErrLinkedState, head)
	}
	if _, err := targets.OpenLocal(ctx, wt); !errors.Is(err, targets.ErrLinkedState) {
		t.Errorf("opening the target again: %v; want %v", err, targets.ErrLinkedState)
	}
	if es := mustReadDir(t, elsewhere); len(es) > 0 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("the push wrote into %s, through the repository's airlock symlink: %v", elsewhere, names)
	}
}

// TestPushKeepsEditsWhenCoreWorktreeIsElsewhere: a working-tree target
// whose config sets core.worktree to another directory (a clean copy of
// the checkout), so that git status, asked whether the files a push
// changes are clean, looks there. The user has an uncommitted edit of
// a.txt in the working tree itself; a push changing a.txt is refused
// before the branch moves, as for any uncommitted change in its way, and
// writes over nothing.
func TestPushKeepsEditsWhenCoreWorktreeIsElsewhere(t *testing.T) {
	tmp := t.TempDir()
	wt, other := filepath.Join(tmp, "wt"), filepath.Join(tmp, "other")
	run(t, tmp, nil, nil, "init", "-q", "-b", "main", wt)
	writeFiles(t, wt, map[string]string{"a.txt": "a\n"})
	run(t, wt, nil, nil, "add", "-A")
	run(t, wt, nil, nil, "commit", "-qm", "base")
	writeFiles(t, other, map[string]string{"a.txt": "a\n"})
	run(t, wt, nil, nil, "config", "core.worktree", other)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := targets.OpenLocal(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	writeFiles(t, wt, map[string]string{"a.txt": "the user's edit\n"})
	sb.ws.WriteFile("a.txt", []byte("from the worker\n"), 0o644)
	_, err = sb.push(t, tgt, "refs/heads/main", head)
	var dirty *targets.DirtyError
	if now, _ := tgt.Head(ctx, "refs/heads/main"); !errors.As(err, &dirty) || now != head {
		t.Errorf("the push: %v (main at %s); want a *DirtyError naming a.txt, main at %s", err, now, head)
	}
	if data, _ := os.ReadFile(filepath.Join(wt, "a.txt")); string(data) != "the user's edit\n" {
		t.Errorf("a.txt holds %q after the push; want the user's edit", data)
	}
	if data, _ := os.ReadFile(filepath.Join(other, "a.txt")); string(data) != "a\n" {
		t.Errorf("the push wrote %s/a.txt: %q", other, data)
	}
}

// TestNoProgramAnAlternateNames: a source (a partial clone missing every
// blob) borrows objects from another repository (objects/info/alternates),
// itself a partial clone missing them, whose config names an uploadpack,
// an sshCommand and a fsmonitor; a bare target borrows from it too. A
// pull from the source (its blobs fetched by airlock from its own
// promisor), a read, and a push to the target run none of them (held:
// only the object directory of an alternate is read).
func TestNoProgramAnAlternateNames(t *testing.T) {
	c := &canaries{dir: t.TempDir()}
	c.marker = filepath.Join(t.TempDir(), "ran")
	upstream := t.TempDir()
	run(t, upstream, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, upstream, map[string]string{"a.txt": "a\n", "d/c.txt": "c\n"})
	run(t, upstream, nil, nil, "add", "-A")
	run(t, upstream, nil, nil, "commit", "-qm", "base")
	for _, k := range []string{"uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"} {
		run(t, upstream, nil, nil, "config", k, "true")
	}
	tmp := t.TempDir()
	lender, src, bare := filepath.Join(tmp, "lender.git"), filepath.Join(tmp, "src.git"), filepath.Join(tmp, "bare.git")
	run(t, tmp, nil, nil, "clone", "-q", "--bare", "--filter=blob:none", "file://"+upstream, lender)
	run(t, tmp, nil, nil, "clone", "-q", "--bare", "--filter=blob:none", "file://"+upstream, src)
	run(t, tmp, nil, nil, "clone", "-q", "--bare", "file://"+upstream, bare)
	appendFile(t, filepath.Join(lender, "config"), configText([][2]string{
		{"remote.origin.uploadpack", c.script(t, "lender remote.origin.uploadpack", "git-upload-pack")},
		{"core.sshCommand", c.script(t, "lender core.sshCommand", "")},
		{"core.fsmonitor", c.script(t, "lender core.fsmonitor", "")},
		{"core.alternateRefsCommand", c.script(t, "lender core.alternateRefsCommand", "")},
	}))
	for _, d := range []string{src, bare} {
		appendFile(t, filepath.Join(d, "objects", "info", "alternates"), filepath.Join(lender, "objects")+"\n")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := targets.OpenLocalBare(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sb := newSandbox(t, s)
	sb.pull(t, s, "refs/heads/main")
	if got, err := sb.ws.ReadFile("d/c.txt"); err != nil || string(got) != "c\n" {
		t.Errorf("reading d/c.txt from the source: %q %v", got, err)
	}
	tgt, err := targets.OpenLocalBare(ctx, bare)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb2 := newSandbox(t, tgt)
	head := sb2.pull(t, tgt, "refs/heads/main")
	sb2.ws.WriteFile("new.txt", []byte("from the worker\n"), 0o644)
	if id, err := sb2.push(t, tgt, "refs/heads/main", head); err != nil {
		t.Errorf("the push to a target borrowing objects: %v (pushed %s)", err, id)
	}
	if ran, _ := os.ReadFile(c.marker); len(ran) > 0 {
		t.Errorf("git ran what an alternate's config names:\n%s", strings.TrimSpace(string(ran)))
	}
}
