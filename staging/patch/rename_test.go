package patch_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/staging/patch"
)

// repoSource reads a real repository's objects through go-git, each
// checked against its id (see DESIGN's facts on go-git's storage).
type repoSource struct {
	storer.EncodedObjectStorer
}

func (s repoSource) ReadBlob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(s, h)
	if err != nil {
		return nil, err
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if got := plumbing.ComputeHash(plumbing.BlobObject, data); got != h {
		return nil, fmt.Errorf("blob %s reads as %s", h, got)
	}
	return data, nil
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// numstat is one file of git's --numstat -z: its counts ("-" for
// binary) and its path, with the path it came from for a rename or copy.
type numstat struct {
	added, deleted string
	path, from     string
}

// parseLog reads `git log --numstat -z --format=%x01%H %P`: each commit's
// id and first parent, and its files.
func parseLog(t *testing.T, out string) (ids, parents []string, files [][]numstat) {
	for _, rec := range strings.Split(out, "\x01")[1:] {
		head, rest, _ := strings.Cut(rec, "\x00")
		f := strings.Fields(head)
		parent := ""
		if len(f) > 1 {
			parent = f[1]
		}
		ids, parents = append(ids, f[0]), append(parents, parent)
		rest = strings.TrimPrefix(rest, "\n")
		var list []numstat
		for rest != "" {
			var n numstat
			var ok bool
			if n.added, rest, ok = strings.Cut(rest, "\t"); !ok {
				t.Fatalf("numstat record %q", rest)
			}
			n.deleted, rest, _ = strings.Cut(rest, "\t")
			if strings.HasPrefix(rest, "\x00") {
				parts := strings.SplitN(rest[1:], "\x00", 3)
				n.from, n.path, rest = parts[0], parts[1], parts[2]
			} else {
				n.path, rest, _ = strings.Cut(rest, "\x00")
			}
			list = append(list, n)
		}
		files = append(files, list)
	}
	return ids, parents, files
}

// ourNumstat is what EachRenamed makes of the change from parent to id,
// in git's terms.
func ourNumstat(t *testing.T, src repoSource, parent, id string) ([]numstat, string, int) {
	tree := func(h string) plumbing.Hash {
		if h == "" {
			return plumbing.ZeroHash
		}
		c, err := object.GetCommit(src, plumbing.NewHash(h))
		if err != nil {
			t.Fatal(err)
		}
		return c.TreeHash
	}
	var out []numstat
	var text bytes.Buffer
	var buf bytes.Buffer
	renames := 0
	err := patch.EachRenamed(src, tree(parent), tree(id), func(f *patch.FilePatch) error {
		n := numstat{added: fmt.Sprint(f.Added), deleted: fmt.Sprint(f.Deleted), path: f.Path, from: f.From}
		if f.Binary {
			n.added, n.deleted = "-", "-"
		}
		if f.Op == change.Rename || f.Op == change.Copy {
			renames++
		}
		out = append(out, n)
		return f.Format(&text, &buf, false)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, text.String(), renames
}

// TestRenamesAsGitOnARealHistory replays the history of the repository
// this test runs in (airlock's own: files moved into packages, copied
// and edited), each commit with a rename or copy and the latest 30:
// the files, their renames and copies, and their line counts are git
// diff -M -C --numstat's, and the whole diff
// of each commit with a rename or copy is git diff -M -C's, byte for
// byte. Before renames were found, a rename with 3 edited lines counted
// as every line deleted and added again.
func TestRenamesAsGitOnARealHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	top := strings.TrimSpace(gitOut(t, ".", "rev-parse", "--show-toplevel"))
	if n := strings.TrimSpace(gitOut(t, top, "rev-list", "--count", "HEAD")); len(n) < 3 {
		t.Skipf("the repository holds %s commits (a shallow clone): fetch its history to replay it", n)
	}
	repo, err := git.PlainOpenWithOptions(top, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		t.Fatal(err)
	}
	src := repoSource{repo.Storer}
	// Every commit of the first-parent history with a rename or copy,
	// and the latest 30 (all of them with AIRLOCK_LONG_TESTS).
	limit := "30"
	if os.Getenv("AIRLOCK_LONG_TESTS") != "" {
		limit = "100000"
	}
	var pick []string
	for _, rec := range strings.Split(gitOut(t, top, "log", "--first-parent", "--diff-merges=first-parent", "-M", "-C", "--diff-filter=RC", "--name-only", "--format=%x01%H", "HEAD"), "\x01")[1:] {
		pick = append(pick, strings.Fields(rec)[0])
	}
	pick = append(pick, strings.Fields(gitOut(t, top, "log", "--first-parent", "--format=%H", "-n", limit, "HEAD"))...)
	out := gitOut(t, top, append([]string{"log", "--no-walk=unsorted", "--diff-merges=first-parent", "-M", "-C", "--numstat", "-z",
		"--format=%x01%H %P"}, pick...)...)
	ids, parents, files := parseLog(t, out)
	commits, withRenames, ourRenames, gitRenames := 0, 0, 0, 0
	shownLines, plainLines := 0, 0
	for i, id := range ids {
		got, text, renames := ourNumstat(t, src, parents[i], id)
		want := files[i]
		for _, n := range want {
			if n.from != "" {
				gitRenames++
			}
		}
		ourRenames += renames
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("commit %s: numstat\n got %v\nwant %v", id, got, want)
		}
		commits++
		if renames == 0 || parents[i] == "" {
			continue
		}
		withRenames++
		for _, n := range got {
			a, _ := strconv.Atoi(n.added)
			d, _ := strconv.Atoi(n.deleted)
			shownLines += a + d
		}
		plainLines += plainCount(t, src, parents[i], id)
		if diff := gitOut(t, top, "diff", "-M", "-C", "--no-color", "--abbrev=7", parents[i], id); diff != text {
			t.Fatalf("commit %s: diff differs from git diff -M -C\n got:\n%s\nwant:\n%s", id, clip(text), clip(diff))
		}
	}
	t.Logf("%d commits, %d with renames or copies (%d of them; git: %d), diffs byte for byte; those commits change %d lines as shown, %d without renames (%.1fx)",
		commits, withRenames, ourRenames, gitRenames, shownLines, plainLines, float64(plainLines)/float64(max(1, shownLines)))
	if commits < 40 || withRenames < 5 {
		t.Fatalf("only %d commits, %d with renames: the history is too short to hold this test", commits, withRenames)
	}
}

// plainCount is the lines the change from parent to id counts without
// renames, as a request counted them before: a rename is every line
// deleted and added again.
func plainCount(t *testing.T, src repoSource, parent, id string) int {
	tree := func(h string) plumbing.Hash {
		c, err := object.GetCommit(src, plumbing.NewHash(h))
		if err != nil {
			t.Fatal(err)
		}
		return c.TreeHash
	}
	n := 0
	if err := patch.Each(src, tree(parent), tree(id), func(f *patch.FilePatch) error {
		n += f.Added + f.Deleted
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "…"
	}
	return s
}

// TestRenameHeadersAsGit makes a rename with edits and a mode change, an
// exact rename, a copy from a file the same change modifies, a file
// copied twice from one deleted (one copy, one rename, as git names
// them), a CRLF rewrite that keeps a file similar, and a move of an
// empty file, in a real repository: the diff is git diff -M -C's.
func TestRenameHeadersAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	gitOut(t, dir, "init", "-q", "-b", "main")
	long := func(tag string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s line %d of a file long enough to be similar\n", tag, i)
		}
		return b.String()
	}
	write := func(name, content string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("old/edited.go", long("edited", 40), 0o644)
	write("old/exact.txt", long("exact", 10), 0o644)
	write("kept.txt", long("kept", 30), 0o644)
	write("twice.txt", long("twice", 20), 0o644)
	write("crlf.txt", long("crlf", 20), 0o644)
	write("empty", "", 0o644)
	write("gone.txt", long("gone", 5), 0o644)
	gitOut(t, dir, "add", "-A")
	gitOut(t, dir, "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", "one")
	for _, p := range []string{"old/edited.go", "old/exact.txt", "twice.txt", "crlf.txt", "empty", "gone.txt"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	write("new/edited.go", strings.Replace(strings.Replace(long("edited", 40), "edited line 3 ", "edited LINE 3 ", 1), "edited line 30 ", "changed line 30 ", 1)+"one more\n", 0o755)
	write("new/exact.txt", long("exact", 10), 0o644)
	write("kept.txt", long("kept", 30)+"grown\n", 0o644)
	write("kept copy.txt", long("kept", 30)+"copied\n", 0o644)
	write("a/twice.txt", long("twice", 20), 0o644)
	write("b/twice.txt", long("twice", 20)+"edit\n", 0o644)
	write("crlf2.txt", strings.ReplaceAll(long("crlf", 20), "\n", "\r\n"), 0o644)
	write("moved/empty", "", 0o644)
	gitOut(t, dir, "add", "-A")
	gitOut(t, dir, "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", "two")

	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := repoSource{repo.Storer}
	head := strings.TrimSpace(gitOut(t, dir, "rev-parse", "HEAD"))
	parent := strings.TrimSpace(gitOut(t, dir, "rev-parse", "HEAD~1"))
	_, text, renames := ourNumstat(t, src, parent, head)
	want := gitOut(t, dir, "diff", "-M", "-C", "--no-color", "HEAD~1", "HEAD")
	if text != want {
		t.Fatalf("diff\n got:\n%s\nwant:\n%s", text, want)
	}
	if renames < 6 {
		t.Fatalf("%d renames and copies, want the 7 made:\n%s", renames, text)
	}
}

// TestRenameLimitAsGit: past the limit (created files left after exact
// renames, times sources, over limit²), only exact renames are found, as
// git -c diff.renameLimit=N diff -M -C says.
func TestRenameLimitAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	gitOut(t, dir, "init", "-q", "-b", "main")
	body := func(tag string) string {
		var b strings.Builder
		for i := 0; i < 20; i++ {
			fmt.Fprintf(&b, "%s line %d\n", tag, i)
		}
		return b.String()
	}
	files := map[string]string{"a.txt": body("a"), "b.txt": body("b"), "k.txt": body("k")}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitOut(t, dir, "add", "-A")
	gitOut(t, dir, "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", "one")
	for _, p := range []string{"a.txt", "b.txt"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "c.txt"), []byte(body("a")+"one more\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "d.txt"), []byte(body("b")), 0o644))
	must(os.WriteFile(filepath.Join(dir, "k.txt"), []byte(body("k")+"kept\n"), 0o644))
	gitOut(t, dir, "add", "-A")
	gitOut(t, dir, "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", "two")
	repo, err := git.PlainOpen(dir)
	must(err)
	src := repoSource{repo.Storer}
	tree := func(rev string) plumbing.Hash {
		return plumbing.NewHash(strings.TrimSpace(gitOut(t, dir, "rev-parse", rev+"^{tree}")))
	}
	for _, limit := range []int{1, 2, 0} {
		changes, err := patch.Trees(src, tree("HEAD~1"), tree("HEAD"))
		must(err)
		var got strings.Builder
		for _, c := range patch.Renames(changes, src.ReadBlob, limit) {
			switch c.Op {
			case change.Rename, change.Copy:
				fmt.Fprintf(&got, "%s%03d\t%s\t%s\n", strings.ToUpper(c.Op.String()[:1]), c.Similarity, c.From, c.Path)
			default:
				fmt.Fprintf(&got, "%s\t%s\n", map[change.Kind]string{change.Create: "A", change.Delete: "D", change.Update: "M"}[c.Op], c.Path)
			}
		}
		args := []string{"diff", "-M", "-C", "--name-status", "HEAD~1", "HEAD"}
		if limit > 0 {
			args = append([]string{"-c", fmt.Sprintf("diff.renameLimit=%d", limit)}, args...)
		}
		t.Logf("limit %d:\n%s", limit, got.String())
		if want := gitOut(t, dir, args...); got.String() != want {
			t.Errorf("limit %d:\n%s\ngit says:\n%s", limit, got.String(), want)
		}
	}
}
