package staging_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/staging"
)

func lines(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestAccept accepts some hunks of two staged commits: what lands is two
// commits, with their own messages (one edited), holding exactly those
// hunks; the rest is unstaged again and the workspace does not change.
func TestAccept(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", lines(30, nil))
	base, err := e.area.Stage(nil, "Base")
	must(t, err)
	must(t, e.area.Advance(base.ID))

	e.write(t, "a.txt", lines(30, map[int]string{2: "two\n", 25: "twenty-five\n"}))
	e.write(t, "b.txt", "left out\n")
	c1, err := e.area.Stage(nil, "Change a twice, add b")
	must(t, err)
	e.write(t, "a.txt", lines(30, map[int]string{2: "two\n", 12: "twelve\n", 25: "twenty-five\n"}))
	e.write(t, "d.txt", "new file\n")
	c2, err := e.area.Stage(nil, "Change a again, add d")
	must(t, err)

	res, err := e.area.Accept(c2.ID, []staging.Selection{
		{Commit: c1.ID, Message: "Change line 25 only", Files: []staging.FileSelection{
			{Path: "a.txt", Hunks: []staging.HunkSelection{{Index: 1}}}}},
		{Commit: c2.ID, Files: []staging.FileSelection{
			// Hunk 0 of c2's a.txt is "-line 12", "+twelve": the
			// addition alone keeps line 12.
			{Path: "a.txt", Hunks: []staging.HunkSelection{{Index: 0, Lines: []int{1}}}},
			{Path: "d.txt", Whole: true}}},
	})
	must(t, err)
	if len(res.Made) != 2 || res.From[0] != c1.ID || res.From[1] != c2.ID {
		t.Fatalf("made %+v from %v", res.Made, res.From)
	}
	if res.Made[0].Message != "Change line 25 only\n" || res.Made[1].Message != "Change a again, add d\n" {
		t.Errorf("messages %q, %q", res.Made[0].Message, res.Made[1].Message)
	}
	if want := []staging.LeftOut{{Path: "a.txt", Hunks: 2}, {Path: "b.txt", Hunks: 1}}; !reflect.DeepEqual(res.LeftOut, want) {
		t.Errorf("left out %+v, want %+v", res.LeftOut, want)
	}
	repo := newRepo(t)
	export(t, e.store, repo, res.Made[1].ID)
	fsck(t, repo)
	if got, want := run(t, repo, "show", "main~1:a.txt"), lines(30, map[int]string{25: "twenty-five\n"}); got != want {
		t.Errorf("first commit's a.txt:\n%s\nwant\n%s", got, want)
	}
	if got, want := run(t, repo, "show", "main:a.txt"), lines(30, map[int]string{12: "line 12\ntwelve\n", 25: "twenty-five\n"}); got != want {
		t.Errorf("second commit's a.txt:\n%s\nwant\n%s", got, want)
	}
	if got := lsTree(t, repo, "main"); len(got) != 2 {
		t.Errorf("tree %v: want a.txt and d.txt", got)
	}
	if got, _ := e.ws.ReadFile("a.txt"); string(got) != lines(30, map[int]string{2: "two\n", 12: "twelve\n", 25: "twenty-five\n"}) {
		t.Errorf("the workspace changed: %q", got)
	}
	st := e.area.Status()
	var unstaged []string
	for _, c := range st.Unstaged {
		unstaged = append(unstaged, c.Path)
	}
	if !reflect.DeepEqual(unstaged, []string{"a.txt", "b.txt"}) || len(st.Staged) != 2 {
		t.Errorf("after accept: staged %d, unstaged %v", len(st.Staged), unstaged)
	}
}

// TestAcceptLeavesOutACommit: a commit nothing is accepted of is not made.
func TestAcceptLeavesOutACommit(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", "a\n")
	c1, err := e.area.Stage(nil, "Add a")
	must(t, err)
	e.write(t, "b.txt", "b\n")
	c2, err := e.area.Stage(nil, "Add b")
	must(t, err)
	res, err := e.area.Accept(c2.ID, []staging.Selection{{Commit: c2.ID, Files: []staging.FileSelection{{Path: "b.txt", Whole: true}}}})
	must(t, err)
	if len(res.Made) != 1 || res.Made[0].Message != "Add b\n" || !res.Made[0].Parent.IsZero() {
		t.Fatalf("made %+v", res.Made)
	}
	_ = c1
}

// TestAcceptDependsOnLeftOut: a hunk that needs an earlier commit's hunk
// that was left out is refused, naming it, and nothing changes.
func TestAcceptDependsOnLeftOut(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", lines(10, nil))
	c1, err := e.area.Stage(nil, "Rename line 5")
	must(t, err)
	_ = c1
	e.write(t, "a.txt", lines(10, map[int]string{5: "five\n"}))
	c2, err := e.area.Stage(nil, "Five")
	must(t, err)
	e.write(t, "a.txt", lines(10, map[int]string{5: "FIVE\n"}))
	c3, err := e.area.Stage(nil, "FIVE")
	must(t, err)
	before := e.area.Commits()
	_, err = e.area.Accept(c3.ID, []staging.Selection{
		{Commit: c1.ID, Files: []staging.FileSelection{{Path: "a.txt", Whole: true}}},
		{Commit: c3.ID, Files: []staging.FileSelection{{Path: "a.txt", Hunks: []staging.HunkSelection{{Index: 0}}}}},
	})
	if !errors.Is(err, staging.ErrHunkDepends) || !strings.Contains(err.Error(), "hunk 0 (@@ -2,7 +2,7 @@ line 1) of a.txt in commit") ||
		!strings.Contains(err.Error(), `"FIVE"`) || !strings.Contains(err.Error(), "accept that earlier change too, or leave this hunk out") {
		t.Fatalf("err = %v", err)
	}
	if after := e.area.Commits(); !reflect.DeepEqual(after, before) {
		t.Error("a refused accept changed the staged commits")
	}
	_ = c2
}

// TestAcceptWhole: a file accepted whole lands as the commit has it: a
// binary file, a new mode, a deletion; and a hunk taken alone of a file
// whose mode changed keeps the old mode.
func TestAcceptWhole(t *testing.T) {
	e := newEnv(t)
	e.write(t, "old.txt", "old\n")
	e.write(t, "run.sh", lines(12, nil))
	e.write(t, "tool.sh", "echo\n")
	base, err := e.area.Stage(nil, "Base")
	must(t, err)
	must(t, e.area.Advance(base.ID))
	must(t, e.ws.WriteFile("img.bin", []byte("\x00\x01\x02"), 0o644))
	must(t, e.ws.Remove("old.txt"))
	must(t, e.ws.Chmod("tool.sh", 0o755))
	e.write(t, "run.sh", lines(12, map[int]string{1: "#!/bin/sh\n", 12: "exit 0\n"}))
	must(t, e.ws.Chmod("run.sh", 0o755))
	c, err := e.area.Stage(nil, "Binary, mode, deletion")
	must(t, err)
	res, err := e.area.Accept(c.ID, []staging.Selection{{Commit: c.ID, Files: []staging.FileSelection{
		{Path: "img.bin", Whole: true}, {Path: "old.txt", Whole: true}, {Path: "tool.sh", Whole: true},
		{Path: "run.sh", Hunks: []staging.HunkSelection{{Index: 1}}}}}})
	must(t, err)
	repo := newRepo(t)
	export(t, e.store, repo, res.Made[0].ID)
	fsck(t, repo)
	var got []string
	for _, l := range lsTree(t, repo, "main") {
		mode, rest, _ := strings.Cut(l, " ")
		_, path, _ := strings.Cut(rest, "\t")
		got = append(got, mode+" "+path)
	}
	if want := []string{"100644 run.sh", "100644 img.bin", "100755 tool.sh"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
	if got := run(t, repo, "show", "main:run.sh"); got != lines(12, map[int]string{12: "exit 0\n"}) {
		t.Errorf("run.sh:\n%s", got)
	}
	if want := []staging.LeftOut{{Path: "run.sh", Hunks: 1}}; !reflect.DeepEqual(res.LeftOut, want) {
		t.Errorf("left out %+v, want %+v (the mode change counts no hunk)", res.LeftOut, want)
	}
}

// TestAcceptDeletionOfAFileLeftChanged: a deletion accepted while an
// earlier change to the file is left out would remove lines the reviewer
// never saw removed (the deletion's diff shows the commit's version), so
// it is refused, as git apply refuses it, and nothing changes; accepting
// the earlier change too deletes the file.
func TestAcceptDeletionOfAFileLeftChanged(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", lines(6, nil))
	base, err := e.area.Stage(nil, "Base")
	must(t, err)
	must(t, e.area.Advance(base.ID))
	e.write(t, "a.txt", lines(6, map[int]string{3: "three\n"}))
	c1, err := e.area.Stage(nil, "Three")
	must(t, err)
	must(t, e.ws.Remove("a.txt"))
	c2, err := e.area.Stage(nil, "Delete a")
	must(t, err)
	before := e.area.Commits()
	for _, fs := range []staging.FileSelection{{Path: "a.txt", Whole: true}, {Path: "a.txt", Hunks: []staging.HunkSelection{{Index: 0}}}} {
		_, err = e.area.Accept(c2.ID, []staging.Selection{{Commit: c2.ID, Files: []staging.FileSelection{fs}}})
		if !errors.Is(err, staging.ErrHunkDepends) || !strings.Contains(err.Error(), "accept the earlier change to it too") {
			t.Fatalf("accepting %+v: err = %v", fs, err)
		}
		if after := e.area.Commits(); !reflect.DeepEqual(after, before) {
			t.Fatal("a refused accept changed the staged commits")
		}
	}
	res, err := e.area.Accept(c2.ID, []staging.Selection{
		{Commit: c1.ID, Files: []staging.FileSelection{{Path: "a.txt", Whole: true}}},
		{Commit: c2.ID, Files: []staging.FileSelection{{Path: "a.txt", Whole: true}}}})
	must(t, err)
	if len(res.Made) != 2 || len(fileList(res.Made[1])) != 1 {
		t.Fatalf("made %+v", res.Made)
	}
}

// TestAcceptEveryLineOfAHunk: a hunk accepted line by line with every
// changed line named is the hunk whole: a deletion so accepted deletes
// the file (git apply of that hunk text deletes it), not leaves it empty.
func TestAcceptEveryLineOfAHunk(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", "x\ny\n")
	base, err := e.area.Stage(nil, "Base")
	must(t, err)
	must(t, e.area.Advance(base.ID))
	must(t, e.ws.Remove("a.txt"))
	c, err := e.area.Stage(nil, "Delete a")
	must(t, err)
	res, err := e.area.Accept(c.ID, []staging.Selection{{Commit: c.ID, Files: []staging.FileSelection{
		{Path: "a.txt", Hunks: []staging.HunkSelection{{Index: 0, Lines: []int{1, 0}}}}}}})
	must(t, err)
	repo := newRepo(t)
	export(t, e.store, repo, res.Made[0].ID)
	if got := lsTree(t, repo, "main"); len(got) != 0 {
		t.Errorf("tree %v: a.txt should be deleted", got)
	}
}

// TestAcceptCreationOverALeftOutDeletion: a file's creation accepted
// while its deletion before it is left out would land the new lines on
// top of the old file, which the reviewer never saw (git apply refuses: the
// file already exists), so it is refused and nothing changes.
func TestAcceptCreationOverALeftOutDeletion(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", "old 1\nold 2\n")
	base, err := e.area.Stage(nil, "Base")
	must(t, err)
	must(t, e.area.Advance(base.ID))
	must(t, e.ws.Remove("a.txt"))
	_, err = e.area.Stage(nil, "Delete a")
	must(t, err)
	e.write(t, "a.txt", "new\n")
	c2, err := e.area.Stage(nil, "Create a anew")
	must(t, err)
	before := e.area.Commits()
	for _, fs := range []staging.FileSelection{{Path: "a.txt", Whole: true}, {Path: "a.txt", Hunks: []staging.HunkSelection{{Index: 0}}}} {
		res, err := e.area.Accept(c2.ID, []staging.Selection{{Commit: c2.ID, Files: []staging.FileSelection{fs}}})
		if !errors.Is(err, staging.ErrHunkDepends) {
			if err == nil {
				repo := newRepo(t)
				export(t, e.store, repo, res.Made[0].ID)
				t.Fatalf("accepting %+v landed a.txt as %q", fs, run(t, repo, "show", "main:a.txt"))
			}
			t.Fatalf("accepting %+v: err = %v", fs, err)
		}
		if after := e.area.Commits(); !reflect.DeepEqual(after, before) {
			t.Fatal("a refused accept changed the staged commits")
		}
	}
}
