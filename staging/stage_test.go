package staging_test

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
)

// A staged commit is a real commit: written into a real repository it
// passes git fsck --strict, and git sees exactly the files, modes, contents
// and metadata that were staged.
func TestStagedCommitIsRealGit(t *testing.T) {
	e := newEnv(t)
	e.write(t, "report.md", "# Q3\n\nRevenue up.\n")
	e.write(t, "charts/revenue.svg", "<svg/>\n")
	e.write(t, "data/blob.bin", "\x00\x01\x02binary")
	e.write(t, "empty.txt", "")
	e.write(t, "bin/run.sh", "#!/bin/sh\necho hi\n")
	must(t, e.ws.Chmod("bin/run.sh", 0o755))
	must(t, e.ws.Symlink("../report.md", "docs/report-link"))
	c, err := e.area.Stage(nil, "Add quarterly report\n\nWith charts.")
	must(t, err)

	repo := newRepo(t)
	export(t, e.store, repo, c.ID)
	fsck(t, repo)
	got := lsTree(t, repo, "main")
	var wantLines []string
	for _, f := range c.Files {
		wantLines = append(wantLines, fmt.Sprintf("%06o %s\t%s", uint32(f.Mode), f.Blob, f.Path))
	}
	sort.Strings(wantLines)
	if !reflect.DeepEqual(got, wantLines) {
		t.Errorf("git ls-tree:\n%s\nstaged:\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	modes := map[string]string{}
	for _, l := range got {
		mode, rest, _ := strings.Cut(l, " ")
		_, p, _ := strings.Cut(rest, "\t")
		modes[p] = mode
	}
	if modes["bin/run.sh"] != "100755" || modes["docs/report-link"] != "120000" || modes["report.md"] != "100644" {
		t.Errorf("modes: %v", modes)
	}
	for _, f := range c.Files {
		if f.Op != change.Create {
			t.Errorf("%s: op %v in a first commit", f.Path, f.Op)
		}
		disk := run(t, repo, "cat-file", "-p", f.Blob.String())
		var want []byte
		if f.Path == "docs/report-link" {
			target, _ := e.ws.Readlink(f.Path)
			want = []byte(target)
		} else {
			want, _ = e.ws.ReadFile(f.Path)
		}
		if disk != string(want) {
			t.Errorf("%s: git has %q, workspace %q", f.Path, disk, want)
		}
		if f.Size != int64(len(want)) {
			t.Errorf("%s: size %d, want %d", f.Path, f.Size, len(want))
		}
	}
	raw := run(t, repo, "cat-file", "-p", c.ID.String())
	wantRaw := fmt.Sprintf("tree %s\nauthor Report Writer <reports@example.com> %d +0000\ncommitter Report Writer <reports@example.com> %d +0000\n\nAdd quarterly report\n\nWith charts.\n",
		c.Tree, c.Created.Unix(), c.Created.Unix())
	if raw != wantRaw {
		t.Errorf("commit object:\n%s\nwant:\n%s", raw, wantRaw)
	}
	stat := run(t, repo, "show", "--stat", "--format=", "main")
	if !strings.Contains(stat, "6 files changed, 7 insertions(+)") {
		t.Errorf("git show --stat:\n%s", stat)
	}
	if st := e.area.Status(); len(st.Unstaged) != 0 || len(st.Staged) != 1 || st.Staged[0].ID != c.ID {
		t.Errorf("status after staging everything: %+v", st)
	}
}

// git itself makes the same commit from the same tree, parent, people,
// dates and message: the SHA is reproducible.
func TestCommitsAreDeterministic(t *testing.T) {
	stage := func() *staging.Commit {
		e := newEnv(t)
		e.write(t, "a.txt", "alpha\n")
		e.write(t, "b/c.txt", "gamma\n")
		c, err := e.area.Stage(nil, "Same change")
		must(t, err)
		return c
	}
	c1, c2 := stage(), stage()
	if c1.ID != c2.ID {
		t.Fatalf("same inputs, different SHAs: %s %s", c1.ID, c2.ID)
	}
	repo := newRepo(t)
	writeDisk(t, repo, map[string]string{"a.txt": "alpha\n", "b/c.txt": "gamma\n"})
	run(t, repo, "add", "-A")
	tree := strings.TrimSpace(run(t, repo, "write-tree"))
	if tree != c1.Tree.String() {
		t.Fatalf("tree %s, git write-tree %s", c1.Tree, tree)
	}
	date := fmt.Sprintf("%d +0000", c1.Created.Unix())
	id := strings.TrimSpace(gitWith(t, repo, []string{
		"GIT_AUTHOR_NAME=Report Writer", "GIT_AUTHOR_EMAIL=reports@example.com", "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=Report Writer", "GIT_COMMITTER_EMAIL=reports@example.com", "GIT_COMMITTER_DATE=" + date,
	}, "commit-tree", tree, "-m", "Same change"))
	if id != c1.ID.String() {
		t.Errorf("git commit-tree made %s, staging made %s", id, c1.ID)
	}
}

func TestStatusAfterEveryKindOfChange(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"edit.txt", "gone.txt", "exec.sh", "type", "dir/a", "dir/b", "mv.txt", "same.txt"} {
		e.write(t, p, "v1 "+p)
	}
	_, err := e.area.Stage(nil, "base")
	must(t, err)
	e.write(t, "new.txt", "new")
	e.write(t, "edit.txt", "v2")
	e.write(t, "same.txt", "changed")
	e.write(t, "same.txt", "v1 same.txt") // back as it was: not a change
	must(t, e.ws.Remove("gone.txt"))
	must(t, e.ws.Chmod("exec.sh", 0o755))
	must(t, e.ws.Remove("type"))
	must(t, e.ws.Symlink("edit.txt", "type"))
	must(t, e.ws.RemoveAll("dir"))
	must(t, e.ws.Rename("mv.txt", "moved/mv.txt"))
	st := e.area.Status()
	var got []string
	for _, c := range st.Unstaged {
		got = append(got, fmt.Sprintf("%s %s %d", c.Kind, c.Path, c.Size))
	}
	want := []string{
		"delete dir/a 8", "delete dir/b 8", "update edit.txt 2", "update exec.sh 10", "delete gone.txt 11",
		"create moved/mv.txt 9", "delete mv.txt 9", "create new.txt 3", "update type 8",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unstaged:\n got %q\nwant %q", got, want)
	}
	c, err := e.area.Stage(nil, "everything")
	must(t, err)
	wantFiles := []string{
		"delete dir/a 100644", "delete dir/b 100644", "update edit.txt 100644", "update exec.sh 100755",
		"delete gone.txt 100644", "create moved/mv.txt 100644", "delete mv.txt 100644", "create new.txt 100644",
		"update type 120000",
	}
	if got := fileList(c); !reflect.DeepEqual(got, wantFiles) {
		t.Errorf("files:\n got %q\nwant %q", got, wantFiles)
	}
	repo := newRepo(t)
	export(t, e.store, repo, c.ID)
	fsck(t, repo)
	if got := run(t, repo, "diff", "--no-renames", "--name-status", "main~1", "main"); got != "D\tdir/a\nD\tdir/b\nM\tedit.txt\nM\texec.sh\nD\tgone.txt\nA\tmoved/mv.txt\nD\tmv.txt\nA\tnew.txt\nT\ttype\n" {
		t.Errorf("git diff --name-status:\n%s", got)
	}
}

func TestStageSomePaths(t *testing.T) {
	e := newEnv(t)
	e.write(t, "src/a.go", "a")
	e.write(t, "src/b.go", "b")
	e.write(t, "docs/x.md", "x")
	c, err := e.area.Stage([]string{"src/", "docs/x.md"}, "part")
	must(t, err)
	if len(c.Files) != 3 {
		t.Errorf("files %v", fileList(c))
	}
	e.write(t, "src/a.go", "a2")
	e.write(t, "top.txt", "t")
	c2, err := e.area.Stage([]string{"top.txt"}, "top only")
	must(t, err)
	if got := fileList(c2); !reflect.DeepEqual(got, []string{"create top.txt 100644"}) {
		t.Errorf("second commit: %v", got)
	}
	if st := e.area.Status(); len(st.Unstaged) != 1 || st.Unstaged[0].Path != "src/a.go" || len(st.Staged) != 2 {
		t.Errorf("status: %+v", st)
	}
	if c2.Parent != c.ID {
		t.Errorf("parent %s, want %s", c2.Parent, c.ID)
	}
}

func TestStageRefusals(t *testing.T) {
	e := newEnv(t)
	if _, err := e.area.Stage(nil, "m"); !errors.Is(err, staging.ErrNothingToStage) {
		t.Errorf("staging nothing: %v", err)
	}
	e.write(t, "a.txt", "a")
	cases := []struct {
		paths []string
		msg   string
		want  error
	}{
		{[]string{"b.txt"}, "m", staging.ErrNothingToStage},
		{[]string{"../a.txt"}, "m", memfs.ErrOutsideSandbox},
		{nil, "", staging.ErrInvalidMessage},
		{nil, "  \n\n ", staging.ErrInvalidMessage},
		{nil, "a\x00b", staging.ErrInvalidMessage},
		{nil, strings.Repeat("x", 70000), staging.ErrInvalidMessage},
	}
	for _, c := range cases {
		if _, err := e.area.Stage(c.paths, c.msg); !errors.Is(err, c.want) {
			t.Errorf("Stage(%q, %.20q): %v, want %v", c.paths, c.msg, err, c.want)
		}
	}
	_, err := e.area.Stage([]string{"b.txt"}, "m")
	if err == nil || !strings.Contains(err.Error(), "a.txt") {
		t.Errorf("the error does not list what is unstaged: %v", err)
	}
	if st := e.area.Status(); len(st.Staged) != 0 || len(st.Unstaged) != 1 {
		t.Errorf("refused stages changed the status: %+v", st)
	}
}

func TestMessageCleanup(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a", "a")
	c, err := e.area.Stage(nil, "\n\n  Subject line  \n\n\n\nBody   \r\nmore\n\n")
	must(t, err)
	if c.Message != "  Subject line\n\nBody\nmore\n" {
		t.Errorf("message %q", c.Message)
	}
}

// Git's own files are checked as git fsck --strict checks them: what fsck
// would reject cannot be staged.
func TestStageRefusesWhatFsckRejects(t *testing.T) {
	cases := map[string]string{
		".gitmodules":     "[submodule \"a\"]\n\tpath = a\n\turl = -u./payload\n",
		"sub/.gitmodules": "[submodule \"a\"]\n\tpath = -x\n\turl = https://x\n",
		".GITMODULES":     "[submodule \"../../x\"]\n\tpath = a\n\turl = https://x\n",
		".gitmodules.":    "[submodule \"a\"]\n\tupdate = !rm -rf /\n",
		"x/.gitmodules":   "[submodule \"a\"]\n\turl = https://a%0ab/x\n",
		".gitattributes":  strings.Repeat("a", 2048) + "\n",
	}
	for p, content := range cases {
		e := newEnv(t)
		e.write(t, p, content)
		if _, err := e.area.Stage(nil, "m"); !errors.Is(err, staging.ErrRefusedContent) {
			t.Errorf("%s: %v, want ErrRefusedContent", p, err)
		}
	}
	// What fsck accepts, staging accepts, and fsck agrees.
	e := newEnv(t)
	e.write(t, ".gitmodules", "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n\tupdate = rebase\n")
	e.write(t, ".gitattributes", "* text=auto\n"+strings.Repeat("b", 2047)+"\n")
	c, err := e.area.Stage(nil, "ok")
	must(t, err)
	repo := newRepo(t)
	export(t, e.store, repo, c.ID)
	fsck(t, repo)
}

// Several staged commits form a chain, each on the one before.
func TestChainOfCommits(t *testing.T) {
	e := newEnv(t)
	var ids []plumbing.Hash
	for i := 0; i < 4; i++ {
		e.write(t, fmt.Sprintf("f%d.txt", i), fmt.Sprint(i))
		e.write(t, "shared.txt", fmt.Sprint("version ", i))
		c, err := e.area.Stage(nil, fmt.Sprint("commit ", i))
		must(t, err)
		if i > 0 && c.Parent != ids[i-1] {
			t.Errorf("commit %d parent %s, want %s", i, c.Parent, ids[i-1])
		}
		ids = append(ids, c.ID)
	}
	repo := newRepo(t)
	export(t, e.store, repo, ids[3])
	fsck(t, repo)
	var want []string
	for i := 3; i >= 0; i-- {
		want = append(want, ids[i].String())
	}
	if got := strings.Fields(run(t, repo, "log", "--format=%H", "main")); !reflect.DeepEqual(got, want) {
		t.Errorf("git log: %v, want %v", got, want)
	}
	if got := run(t, repo, "show", "main:shared.txt"); got != "version 3" {
		t.Errorf("shared.txt at the tip: %q", got)
	}
}

func TestDiscardInTheMiddle(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", "a")
	ca, _ := e.area.Stage(nil, "A")
	e.write(t, "b.txt", "b")
	e.write(t, "shared.txt", "from B")
	cb, _ := e.area.Stage(nil, "B")
	e.write(t, "c.txt", "c")
	e.write(t, "shared.txt", "from C")
	cc, _ := e.area.Stage(nil, "C")
	before, _ := e.ws.ReadFile("b.txt")

	res, err := e.area.Discard(cb.ID)
	must(t, err)
	if !reflect.DeepEqual(res.Unstaged, []string{"b.txt"}) || !reflect.DeepEqual(res.StillStaged, []string{"shared.txt"}) {
		t.Errorf("discard result %+v", res)
	}
	chain := e.area.Commits()
	if len(chain) != 2 || chain[0].ID != ca.ID || chain[1].Parent != ca.ID || res.Rebuilt[cc.ID] != chain[1].ID {
		t.Fatalf("chain after discard: %+v", chain)
	}
	if chain[1].Message != "C\n" || !chain[1].Author.When.Equal(cc.Author.When) {
		t.Errorf("the rebuilt commit lost its message or date: %+v", chain[1])
	}
	if got, _ := e.ws.ReadFile("b.txt"); string(got) != string(before) {
		t.Error("discard changed the workspace")
	}
	st := e.area.Status()
	if len(st.Unstaged) != 1 || st.Unstaged[0].Path != "b.txt" || st.Unstaged[0].Kind != change.Create {
		t.Errorf("unstaged after discard: %+v", st.Unstaged)
	}
	repo := newRepo(t)
	export(t, e.store, repo, chain[1].ID)
	fsck(t, repo)
	if got := lsTree(t, repo, "main"); len(got) != 3 || !strings.HasSuffix(got[0], "\ta.txt") || !strings.HasSuffix(got[1], "\tc.txt") {
		t.Errorf("tree after discard: %v", got)
	}
	if got := run(t, repo, "show", "main:shared.txt"); got != "from C" {
		t.Errorf("shared.txt = %q", got)
	}
	if _, err := e.area.Discard(cb.ID); !errors.Is(err, staging.ErrNoSuchCommit) {
		t.Errorf("discarding twice: %v", err)
	}
}

// A later commit that cannot stand without the discarded one stops the
// discard; nothing changes.
func TestDiscardRefusesWhenLaterCommitsDependOnIt(t *testing.T) {
	e := newEnv(t)
	e.write(t, "x", "a file")
	_, err := e.area.Stage(nil, "base")
	must(t, err)
	must(t, e.ws.Remove("x"))
	cb, err := e.area.Stage(nil, "remove x")
	must(t, err)
	e.write(t, "x/y", "now a directory")
	_, err = e.area.Stage(nil, "x/y")
	must(t, err)
	before := e.area.Commits()
	_, err = e.area.Discard(cb.ID)
	if err == nil || !strings.Contains(err.Error(), "depends on it") {
		t.Fatalf("discard of a needed commit: %v", err)
	}
	if after := e.area.Commits(); !reflect.DeepEqual(before, after) {
		t.Error("a refused discard changed the chain")
	}
}

func TestDiscardAllAndReset(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a", "a")
	_, err := e.area.Stage(nil, "A")
	must(t, err)
	e.write(t, "b", "b")
	e.area.DiscardAll()
	if st := e.area.Status(); len(st.Staged) != 0 || len(st.Unstaged) != 2 {
		t.Errorf("after DiscardAll: %+v", st)
	}
	must(t, e.area.Reset())
	if st := e.area.Status(); len(st.Staged) != 0 || len(st.Unstaged) != 0 {
		t.Errorf("after Reset: %+v", st)
	}
	if _, err := e.ws.Stat("a"); err == nil {
		t.Error("Reset kept a file the base does not have")
	}
}

func TestLookup(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a", "a")
	c, _ := e.area.Stage(nil, "A")
	for _, id := range []string{c.ID.String(), shortid.Hash(c.ID), strings.ToUpper(c.ID.String()[:10])} {
		if got, err := e.area.Lookup(id); err != nil || got.ID != c.ID {
			t.Errorf("Lookup(%q) = %v, %v", id, got, err)
		}
	}
	for _, id := range []string{"", "abc", "zzzzzzz", "0000000"} {
		if _, err := e.area.Lookup(id); !errors.Is(err, staging.ErrNoSuchCommit) {
			t.Errorf("Lookup(%q): %v", id, err)
		}
	}
}

// HEAD names the latest staged commit, as in git, and HEAD~N, HEAD^ and @
// the ones before; past the staged commits, or with none staged, the
// error says so.
func TestLookupHEAD(t *testing.T) {
	e := newEnv(t)
	if _, err := e.area.Lookup("HEAD"); !errors.Is(err, staging.ErrNoSuchCommit) || !strings.Contains(err.Error(), "nothing is staged") {
		t.Errorf("HEAD with nothing staged: %v", err)
	}
	var cs []*staging.Commit
	for _, f := range []string{"a", "b", "c"} {
		e.write(t, f, f)
		c, err := e.area.Stage(nil, f)
		must(t, err)
		cs = append(cs, c)
	}
	for _, tc := range []struct {
		id   string
		want int // index in cs; -1: an error
	}{
		{"HEAD", 2}, {"head", 2}, {" @ ", 2}, {"HEAD~0", 2}, {"HEAD~", 1}, {"HEAD~1", 1}, {"HEAD^", 1},
		{"HEAD^^", 0}, {"@~2", 0}, {"HEAD~1^", 0}, {"HEAD~3", -1}, {"HEAD~x", -1}, {"HEADS", -1}, {"HEAD~99999999", -1},
	} {
		got, err := e.area.Lookup(tc.id)
		switch {
		case tc.want < 0 && !errors.Is(err, staging.ErrNoSuchCommit):
			t.Errorf("Lookup(%q) = %v, %v; want ErrNoSuchCommit", tc.id, got, err)
		case tc.want >= 0 && (err != nil || got.ID != cs[tc.want].ID):
			t.Errorf("Lookup(%q) = %v, %v; want %s", tc.id, got, err, cs[tc.want].Message)
		}
	}
	if _, err := e.area.Lookup("HEAD~3"); err == nil || !strings.Contains(err.Error(), "only 3 commits are staged") {
		t.Errorf("HEAD~3 of 3: %v", err)
	}
}

// Seeding from a real repository's commit, all of it or some paths, then
// staging on top: the parent is that commit and git agrees.
func TestSeedFromCommitAndStageOnTop(t *testing.T) {
	src := newRepo(t)
	writeDisk(t, src, map[string]string{
		"README.md": "# project\n", "src/main.go": "package main\n", "src/util/u.go": "package util\n",
		"tools/run.sh*": "#!/bin/sh\n", "docs/link": "->../README.md", "templates/t.md": "template\n",
	})
	run(t, src, "add", "-A")
	gitWith(t, src, []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"}, "commit", "-qm", "init")

	for _, paths := range [][]string{nil, {"templates/", "src/main.go"}} {
		t.Run(fmt.Sprint(paths), func(t *testing.T) {
			e := newEnv(t)
			head := importRepo(t, e.store, src)
			refused, err := e.area.SeedFrom(head, paths)
			must(t, err)
			if len(refused) != 0 {
				t.Fatalf("refused %v", refused)
			}
			if e.area.Base() != head {
				t.Errorf("base %s, want %s", e.area.Base(), head)
			}
			if st := e.area.Status(); len(st.Unstaged) != 0 {
				t.Errorf("changes right after seeding: %v", st.Unstaged)
			}
			got, err := e.ws.ReadFile("src/main.go")
			if err != nil || string(got) != "package main\n" {
				t.Errorf("src/main.go = %q, %v", got, err)
			}
			if _, err := e.ws.Stat("README.md"); (err == nil) != (paths == nil) {
				t.Errorf("README.md present=%v with paths %v", err == nil, paths)
			}
			e.write(t, "src/main.go", "package main\n\nfunc main() {}\n")
			e.write(t, "templates/new.md", "new\n")
			c, err := e.area.Stage(nil, "edit")
			must(t, err)
			if c.Parent != head || c.Base != head {
				t.Errorf("parent %s base %s, want %s", c.Parent, c.Base, head)
			}
			repo := newRepo(t)
			export(t, e.store, repo, c.ID)
			fsck(t, repo)
			// Files that were not pulled are still in the tree, untouched.
			if got := run(t, repo, "diff", "--no-renames", "--name-status", head.String(), "main"); got != "M\tsrc/main.go\nA\ttemplates/new.md\n" {
				t.Errorf("git diff base..staged:\n%s", got)
			}
		})
	}
	e := newEnv(t)
	head := importRepo(t, e.store, src)
	if _, err := e.area.SeedFrom(head, []string{"nope/"}); err == nil {
		t.Error("seeding a path that is not in the commit succeeded")
	}
}

// A snapshot's id is the tree git writes for the same content; checking it
// out restores the workspace exactly.
func TestSnapshotsAreContentAddressed(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "run.sh*": "#!/bin/sh\n", "l": "->a.txt"}
	for p, c := range files {
		exe := strings.HasSuffix(p, "*")
		p = strings.TrimSuffix(p, "*")
		if target, ok := strings.CutPrefix(c, "->"); ok {
			must(t, e.ws.Symlink(target, p))
			continue
		}
		e.write(t, p, c)
		if exe {
			must(t, e.ws.Chmod(p, 0o755))
		}
	}
	id1, err := e.area.Snapshot()
	must(t, err)
	repo := newRepo(t)
	writeDisk(t, repo, files)
	run(t, repo, "add", "-A")
	if tree := strings.TrimSpace(run(t, repo, "write-tree")); tree != id1.String() {
		t.Fatalf("snapshot %s, git write-tree %s", id1, tree)
	}
	_, err = e.area.Stage([]string{"a.txt"}, "part") // staging does not change the snapshot id
	must(t, err)
	if id, _ := e.area.Snapshot(); id != id1 {
		t.Errorf("snapshot id changed by staging: %s, %s", id, id1)
	}
	e.write(t, "a.txt", "changed")
	must(t, e.ws.RemoveAll("d"))
	e.write(t, "new", "n")
	id2, err := e.area.Snapshot()
	must(t, err)
	if id2 == id1 {
		t.Fatal("different content, same id")
	}
	refused, err := e.area.Checkout(id1)
	must(t, err)
	if len(refused) > 0 {
		t.Fatal(refused)
	}
	if id, _ := e.area.Snapshot(); id != id1 {
		t.Errorf("after checkout the workspace snapshots as %s, want %s", id, id1)
	}
	if _, err := e.ws.Stat("new"); err == nil {
		t.Error("checkout kept a file the snapshot does not have")
	}
	if fi, err := e.ws.Lstat("run.sh"); err != nil || fi.Mode() != 0o755 {
		t.Errorf("run.sh after checkout: %v %v", fi, err)
	}
	if fi, err := e.ws.Lstat("l"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("l after checkout: %v %v", fi, err)
	}
}

func TestDiffTreesStructured(t *testing.T) {
	e := newEnv(t)
	e.write(t, "keep", "k")
	e.write(t, "edit", "1")
	e.write(t, "gone/x", "x")
	a, _ := e.area.Snapshot()
	e.write(t, "edit", "2")
	must(t, e.ws.RemoveAll("gone"))
	e.write(t, "new/y", "y")
	b, _ := e.area.Snapshot()
	changes, err := e.store.DiffTrees(a, b)
	must(t, err)
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %s %v %v", c.Op, c.Path, !c.OldHash.IsZero(), !c.NewHash.IsZero()))
	}
	want := []string{"update edit true true", "delete gone/x true false", "create new/y false true"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DiffTrees: %v, want %v", got, want)
	}
	if cs, _ := e.store.DiffTrees(a, a); len(cs) != 0 {
		t.Errorf("a tree differs from itself: %v", cs)
	}
}

// Several goroutines write, stage and read status at once; run with -race.
func TestConcurrentStageAndStatus(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				e.write(t, fmt.Sprintf("g%d/f%d.txt", g, i%5), fmt.Sprint(i))
				switch i % 3 {
				case 0:
					if _, err := e.area.Stage([]string{fmt.Sprintf("g%d", g)}, "m"); err != nil && !errors.Is(err, staging.ErrNothingToStage) {
						t.Error(err)
					}
				case 1:
					e.area.Status()
				case 2:
					if _, err := e.area.Snapshot(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if _, err := e.area.Stage(nil, "rest"); err != nil && !errors.Is(err, staging.ErrNothingToStage) {
		t.Fatal(err)
	}
	chain := e.area.Commits()
	repo := newRepo(t)
	export(t, e.store, repo, chain[len(chain)-1].ID)
	fsck(t, repo)
	if n := strings.Count(run(t, repo, "ls-tree", "-r", "--name-only", "main"), "\n"); n != 20 {
		t.Errorf("%d files at the tip, want 20", n)
	}
	if st := e.area.Status(); len(st.Unstaged) != 0 {
		t.Errorf("unstaged after staging everything: %v", st.Unstaged)
	}
}

// Picking some files of a push makes one commit of just those, on the
// base; the rest is unstaged again and the workspace is untouched.
func TestPick(t *testing.T) {
	e := newEnv(t)
	e.write(t, "report.md", "report")
	e.write(t, "secret-ish.txt", "do not push")
	c1, err := e.area.Stage(nil, "Add report")
	must(t, err)
	e.write(t, "report.md", "report v2")
	c2, err := e.area.Stage([]string{"report.md"}, "Improve report")
	must(t, err)
	e.write(t, "later.txt", "later")
	c3, err := e.area.Stage(nil, "Later")
	must(t, err)

	// A push of c2 carries c1 and c2; the reviewer picks report.md only.
	p, err := e.area.Pick(c2.ID, []string{"report.md"})
	must(t, err)
	if !p.Parent.IsZero() || p.Message != "Improve report\n" || !reflect.DeepEqual(fileList(p), []string{"create report.md 100644"}) {
		t.Errorf("picked commit %+v files %v", p, fileList(p))
	}
	chain := e.area.Commits()
	if len(chain) != 2 || chain[0].ID != p.ID || chain[1].Parent != p.ID || chain[1].Message != c3.Message {
		t.Fatalf("chain after pick: %+v", chain)
	}
	if st := e.area.Status(); len(st.Unstaged) != 1 || st.Unstaged[0].Path != "secret-ish.txt" {
		t.Errorf("unstaged after pick: %+v", st.Unstaged)
	}
	if got, _ := e.ws.ReadFile("report.md"); string(got) != "report v2" {
		t.Errorf("the workspace changed: %q", got)
	}
	repo := newRepo(t)
	export(t, e.store, repo, chain[1].ID)
	fsck(t, repo)
	if got := run(t, repo, "show", "main~1:report.md"); got != "report v2" {
		t.Errorf("picked content %q", got)
	}
	if got := lsTree(t, repo, "main"); len(got) != 2 {
		t.Errorf("tip tree %v: want report.md and later.txt only", got)
	}
	if _, err := e.area.Pick(c1.ID, []string{"nope.txt"}); err == nil {
		t.Error("picked a path the push does not change")
	}
}
