package staging_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/staging"
)

// movedEnv stages a base, then one commit that renames old/a.go to
// new/a.go with three edits (three hunks, one of them a mode change
// too), copies src.txt to copy.txt with two edits while src.txt changes
// too, and deletes gone.txt.
func movedEnv(t *testing.T) (*env, *staging.Commit, map[string]string) {
	e := newEnv(t)
	e.write(t, "old/a.go", lines(40, nil))
	e.write(t, "src.txt", lines(30, nil))
	e.write(t, "gone.txt", "gone\n")
	base, err := e.area.Stage(nil, "Base")
	must(t, err)
	must(t, e.area.Advance(base.ID))
	must(t, e.ws.Remove("old/a.go"))
	must(t, e.ws.Remove("gone.txt"))
	e.write(t, "new/a.go", lines(40, map[int]string{2: "two\n", 20: "twenty\n", 39: "thirty-nine\n"}))
	e.write(t, "src.txt", lines(30, map[int]string{15: "fifteen\n"}))
	e.write(t, "copy.txt", lines(30, map[int]string{1: "one\n", 29: "twenty-nine\n"}))
	c, err := e.area.Stage(nil, "Move a, copy src")
	must(t, err)
	// Each file's diff as the reviewer is shown it (header and hunks).
	diffs := map[string]string{}
	var buf bytes.Buffer
	must(t, e.area.EachCommitPatch(c.ID, func(f *staging.FilePatch) error {
		var text bytes.Buffer
		if err := f.Format(&text, &buf, false); err != nil {
			return err
		}
		diffs[f.Path] = text.String()
		return nil
	}))
	return e, c, diffs
}

// TestAcceptHunksOfARenameAsGitApply accepts every subset of a renamed
// file's hunks and of a copied file's (one hunk cut to some of its
// lines): the tree that lands is the tree git apply --cached makes of the
// same hunk texts on the base. A rename the selection does not name is
// left out whole (the file keeps its old name), and one accepted in part
// renames the file with the accepted edits only. Before renames were
// found, new/a.go was a creation of 40 lines: no hunk of it could be
// accepted alone against the old file.
func TestAcceptHunksOfARenameAsGitApply(t *testing.T) {
	needGit(t)
	_, c, diffs := movedEnv(t)
	renamed, copied := diffs["new/a.go"], diffs["copy.txt"]
	if !strings.Contains(renamed, "rename from old/a.go\nrename to new/a.go\n") || !strings.Contains(copied, "copy from src.txt\ncopy to copy.txt\n") {
		t.Fatalf("the commit's diff has no rename and copy:\n%s\n%s", renamed, copied)
	}
	if _, ok := diffs["old/a.go"]; ok {
		t.Fatalf("the rename's source is shown deleted too: %v", reflect.ValueOf(diffs).MapKeys())
	}
	rh, rhunks, err := hunk.Split(renamed)
	must(t, err)
	ch, chunks, err := hunk.Split(copied)
	must(t, err)
	if len(rhunks) != 3 || len(chunks) != 2 {
		t.Fatalf("%d hunks of the rename, %d of the copy; want 3 and 2", len(rhunks), len(chunks))
	}
	checked := 0
	for mask := 0; mask < 8; mask++ {
		for _, copyPick := range []string{"none", "whole", "lines"} {
			e, c2, _ := movedEnv(t)
			if c2.ID != c.ID {
				t.Fatal("the same staging made different commits")
			}
			// gone.txt is always accepted, so that something lands.
			sel := staging.Selection{Commit: c.ID, Files: []staging.FileSelection{{Path: "gone.txt", Whole: true}}}
			patch := diffs["gone.txt"]
			var picked []staging.HunkSelection
			var texts []string
			for i := range rhunks {
				if mask&(1<<i) != 0 {
					picked = append(picked, staging.HunkSelection{Index: i})
					texts = append(texts, rhunks[i])
				}
			}
			if len(picked) > 0 {
				sel.Files = append(sel.Files, staging.FileSelection{Path: "new/a.go", Hunks: picked})
				patch += rh + strings.Join(texts, "")
			}
			switch copyPick {
			case "whole":
				sel.Files = append(sel.Files, staging.FileSelection{Path: "copy.txt", Whole: true})
				patch += copied
			case "lines":
				// The second hunk's addition alone: line 29 stays, and
				// "twenty-nine" is added after it.
				cut, err := hunk.Select(chunks[1], []int{1})
				must(t, err)
				sel.Files = append(sel.Files, staging.FileSelection{Path: "copy.txt", Hunks: []staging.HunkSelection{{Index: 1, Lines: []int{1}}}})
				patch += ch + cut
			}
			res, err := e.area.Accept(c.ID, []staging.Selection{sel})
			must(t, err)
			repo := newRepo(t)
			export(t, e.store, repo, res.Made[0].ID)
			fsck(t, repo)
			run(t, repo, "read-tree", "main~1")
			pf := filepath.Join(t.TempDir(), "picked.patch")
			must(t, os.WriteFile(pf, []byte(patch), 0o644))
			run(t, repo, "apply", "--cached", pf)
			want := strings.TrimSpace(run(t, repo, "write-tree"))
			if got := strings.TrimSpace(run(t, repo, "rev-parse", "main^{tree}")); got != want {
				t.Fatalf("rename hunks %03b, copy %s: landed tree %s, git apply --cached makes %s\n%s\nlanded:\n%s\ngit:\n%s",
					mask, copyPick, got, want, patch, run(t, repo, "ls-tree", "-r", "main"), run(t, repo, "ls-files", "-s"))
			}
			_, hasOld := lookup(t, repo, "main", "old/a.go")
			if hasOld != (len(picked) == 0) {
				t.Fatalf("rename hunks %03b: old/a.go there = %v", mask, hasOld)
			}
			checked++
		}
	}
	t.Logf("%d selections of a rename and a copy checked against git apply --cached", checked)
}

func lookup(t *testing.T, repo, rev, path string) (string, bool) {
	t.Helper()
	out := run(t, repo, "ls-tree", rev, "--", path)
	return out, out != ""
}

// TestAcceptRenameWhole: an exact rename (no hunks) is taken whole, the
// old name gone; a rename named whole lands as the commit has it; and
// the commit's files are shown as git shows them, the rename once.
func TestAcceptRenameWhole(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", lines(10, nil))
	e.write(t, "b.txt", lines(20, nil))
	base, err := e.area.Stage(nil, "Base")
	must(t, err)
	must(t, e.area.Advance(base.ID))
	must(t, e.ws.Rename("a.txt", "dir/a.txt"))
	must(t, e.ws.Remove("b.txt"))
	e.write(t, "c.txt", lines(20, map[int]string{7: "seven\n"}))
	c, err := e.area.Stage(nil, "Move a, b")
	must(t, err)
	var got []string
	must(t, e.area.EachCommitPatch(c.ID, func(f *staging.FilePatch) error {
		got = append(got, fmt.Sprintf("%s %s<-%s %d%% +%d-%d", f.Op, f.Path, f.From, f.Similarity, f.Added, f.Deleted))
		return nil
	}))
	if want := []string{"rename c.txt<-b.txt 95% +1-1", "rename dir/a.txt<-a.txt 100% +0-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("patches %q, want %q", got, want)
	}
	res, err := e.area.Accept(c.ID, []staging.Selection{{Commit: c.ID, Files: []staging.FileSelection{
		{Path: "dir/a.txt", Whole: true}, {Path: "c.txt", Whole: true}}}})
	must(t, err)
	repo := newRepo(t)
	export(t, e.store, repo, res.Made[0].ID)
	if got, want := run(t, repo, "diff", "-M", "--name-status", "main~1", "main"), "R095\tb.txt\tc.txt\nR100\ta.txt\tdir/a.txt\n"; got != want {
		t.Fatalf("landed %q, want %q", got, want)
	}
	if len(res.LeftOut) != 0 {
		t.Fatalf("left out %+v", res.LeftOut)
	}
}
