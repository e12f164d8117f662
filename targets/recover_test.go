//go:build unix

package targets_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets"
)

// pushTemplate is a working-tree repository with main at OLD, checked out
// and clean, and branch next at NEW, a commit that changes, deletes and
// creates files, replaces a file by a directory, a directory by a file,
// and a symlink's target.
func pushTemplate(t *testing.T) (dir string, old, new plumbing.Hash) {
	t.Helper()
	dir = t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	oldFiles := map[string]targetFile{
		"with space.txt": {Data: "old space\n"}, "del1.txt": {Data: "old del1\n"}, "del2.txt": {Data: "old del2\n"},
		"keep.txt": {Data: "keep\n"}, "dir/x.txt": {Data: "old dir/x\n"}, "f": {Data: "old f\n"}, "link": {Data: "a", Symlink: true},
	}
	newFiles := map[string]targetFile{
		"with space.txt": {Data: "new space\n"}, "keep.txt": {Data: "keep\n"}, "dir": {Data: "new dir\n"},
		"f/y.txt": {Data: "new f/y\n"}, "link": {Data: "b", Symlink: true}, "add1.txt": {Data: "new add1\n"}, "new/dir/n.txt": {Data: "new n\n"},
	}
	for i := 1; i <= 6; i++ {
		p := "m" + string(rune('0'+i)) + ".txt"
		oldFiles[p] = targetFile{Data: "old " + p + "\n"}
		newFiles[p] = targetFile{Data: "new " + p + "\n"}
	}
	old = (&gitInspector{dir: dir, worktree: dir}).Commit(t, "main", oldFiles)
	run(t, dir, nil, nil, "branch", "next")
	new = (&gitInspector{dir: dir}).Commit(t, "next", newFiles)
	return dir, old, new
}

// interrupted copies template and leaves it as the push of main from OLD
// to NEW killed part-way through the roll-forward: m1.txt, del1.txt,
// add1.txt and link are done, the rest and the index are not. The user's
// work outside the push (keep.txt modified, notes.txt untracked) is there
// too.
func interrupted(t *testing.T, template string, old, new plumbing.Hash) string {
	t.Helper()
	dir := copyRepo(t, template)
	if err := targets.InterruptPush(context.Background(), dir, "refs/heads/main", old, new); err != nil {
		t.Fatal(err)
	}
	// What the roll-forward did before the kill.
	writeFiles(t, dir, map[string]string{"m1.txt": "new m1.txt\n", "add1.txt": "new add1\n"})
	os.Remove(filepath.Join(dir, "del1.txt"))
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink("b", filepath.Join(dir, "link"))
	// The user's work outside the push.
	writeFiles(t, dir, map[string]string{"keep.txt": "keep: mine\n", "notes.txt": "my notes\n"})
	return dir
}

// Recovery never clobbers (issue 13): a push interrupted on a checked-out
// branch is finished at the next start only where the working tree is as
// the push left it. A path the user changed since (modified, deleted,
// replaced by a directory, recreated where the push deleted it, staged, a
// file in the way of the push's directory) is left exactly as the user
// has it, named in the error, and `git status` shows nothing else; the
// error's commands show the difference and take the branch's version.
func TestRecoveryKeepsEditsMadeSince(t *testing.T) {
	write := func(p, data string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, p))
			writeFiles(t, dir, map[string]string{p: data})
		}
	}
	rm := func(p string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, p)) }
	}
	cases := []struct {
		name    string
		edits   []func(t *testing.T, dir string)
		kept    []string
		deleted []string // of kept, those the branch does not have
		staged  bool     // m5.txt staged by the user
	}{
		{name: "no edits"},
		{name: "an unfinished file modified", edits: []func(*testing.T, string){write("m2.txt", "mine\n")}, kept: []string{"m2.txt"}},
		{name: "a finished file modified", edits: []func(*testing.T, string){write("m1.txt", "mine\n")}, kept: []string{"m1.txt"}},
		{name: "a file of the push deleted", edits: []func(*testing.T, string){rm("m3.txt")}, kept: []string{"m3.txt"}},
		{name: "a file replaced by a directory", edits: []func(*testing.T, string){rm("m4.txt"), write("m4.txt/inner", "mine\n")}, kept: []string{"m4.txt"}},
		{name: "a deleted file created again", edits: []func(*testing.T, string){write("del1.txt", "mine\n")}, kept: []string{"del1.txt"}, deleted: []string{"del1.txt"}},
		{name: "a file the push deletes modified", edits: []func(*testing.T, string){write("del2.txt", "mine\n")}, kept: []string{"del2.txt"}, deleted: []string{"del2.txt"}},
		{name: "a file created where the push creates one", edits: []func(*testing.T, string){write("new/dir/n.txt", "mine\n")}, kept: []string{"new/dir/n.txt"}},
		{name: "a file in the way of the push's directory", edits: []func(*testing.T, string){write("new", "mine\n")}, kept: []string{"new/dir/n.txt"}},
		{name: "the file the push replaces by a directory modified", edits: []func(*testing.T, string){write("f", "mine\n")}, kept: []string{"f", "f/y.txt"}, deleted: []string{"f"}},
		{name: "a file of the directory the push replaces by a file modified", edits: []func(*testing.T, string){write("dir/x.txt", "mine\n")},
			kept: []string{"dir", "dir/x.txt"}, deleted: []string{"dir/x.txt"}},
		{name: "an edit staged", edits: []func(*testing.T, string){write("m5.txt", "staged\n"), func(t *testing.T, dir string) {
			run(t, dir, nil, nil, "add", "m5.txt")
		}}, kept: []string{"m5.txt"}, staged: true},
		{name: "made executable", edits: []func(*testing.T, string){func(t *testing.T, dir string) {
			os.Chmod(filepath.Join(dir, "m6.txt"), 0o755)
		}}, kept: []string{"m6.txt"}},
		{name: "a directory where the push deletes a file", edits: []func(*testing.T, string){rm("del2.txt"), write("del2.txt/inner", "mine\n")}},
		{name: "the old content written back", edits: []func(*testing.T, string){write("m1.txt", "old m1.txt\n")}},
		{name: "several, one with a space", edits: []func(*testing.T, string){
			write("m2.txt", "mine\n"), write("with space.txt", "mine\n"), write("del2.txt", "mine\n"), rm("m3.txt"),
			func(t *testing.T, dir string) {
				os.Remove(filepath.Join(dir, "link"))
				os.Symlink("mine", filepath.Join(dir, "link"))
			},
		}, kept: []string{"del2.txt", "link", "m2.txt", "m3.txt", "with space.txt"}, deleted: []string{"del2.txt"}},
	}
	template, old, new := pushTemplate(t)
	tmpl := &gitInspector{dir: template}
	oldTree, newTree := tmpl.Tree(t, old), tmpl.Tree(t, new)
	inPush := func(p string) bool { return oldTree[p] != newTree[p] }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each in its own repository: mostly waiting for git
			ctx := context.Background()
			dir := interrupted(t, template, old, new)
			for _, e := range c.edits {
				e(t, dir)
			}
			before := worktreeFiles(t, dir)
			staged := ""
			if c.staged {
				staged = "m5.txt\x00"
			}

			_, err := targets.OpenLocal(ctx, dir)
			var kept *targets.KeptError
			switch {
			case len(c.kept) == 0 && err != nil:
				t.Fatalf("recovery: %v", err)
			case len(c.kept) > 0 && (!errors.As(err, &kept) || !errors.Is(err, targets.ErrEditsKept)):
				t.Fatalf("recovery: %v, want a KeptError naming %v", err, c.kept)
			case kept != nil && (!reflect.DeepEqual(kept.Paths, c.kept) || !reflect.DeepEqual(kept.Deleted, c.deleted) || kept.New != new):
				t.Fatalf("kept %v (deleted %v), want %v (deleted %v)", kept.Paths, kept.Deleted, c.kept, c.deleted)
			}
			if kept != nil {
				for _, p := range c.kept {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("the error does not name %s: %v", p, err)
					}
				}
			}
			// Recovery is over: the journal and the temporary ref are gone,
			// and the target opens.
			if _, err := os.Stat(targets.JournalPath(dir)); !os.IsNotExist(err) {
				t.Errorf("the journal is still there: %v", err)
			}
			if refs := run(t, dir, nil, nil, "for-each-ref", "refs/airlock/"); refs != "" {
				t.Errorf("temporary refs left behind:\n%s", refs)
			}
			if _, err := targets.OpenLocal(ctx, dir); err != nil {
				t.Errorf("opening again: %v", err)
			}

			nests := func(p string) bool {
				for _, k := range c.kept {
					if p == k || strings.HasPrefix(p, k+"/") || strings.HasPrefix(k, p+"/") {
						return true
					}
				}
				return false
			}
			// Every path of the push is at the new commit but the kept ones,
			// which, with everything outside the push, are exactly as the
			// user had them.
			after := worktreeFiles(t, dir)
			for _, p := range union(before, after, newTree) {
				b, bok := before[p]
				a, aok := after[p]
				n, nok := newTree[p]
				switch {
				case !inPush(p) || nests(p):
					if a != b || aok != bok {
						t.Errorf("%s is %+v (%v), the user had %+v (%v)", p, a, aok, b, bok)
					}
				case a != n || aok != nok:
					t.Errorf("%s is %+v (%v), the pushed commit has %+v (%v)", p, a, aok, n, nok)
				}
			}
			// git status shows the user's work and the kept paths, nothing
			// of the push; the index holds the branch's version (or what
			// the user staged).
			for _, p := range statusPaths(t, dir) {
				if inPush(p) && !nests(p) {
					t.Errorf("git status shows %s, which was not kept", p)
				}
			}
			if got := run(t, dir, nil, nil, "diff", "--cached", "--name-only", "-z"); got != staged {
				t.Errorf("the index differs from the branch at %q, want only what the user staged (%q)", got, staged)
			}
			(&gitInspector{dir: dir}).Fsck(t)
			if kept == nil {
				return
			}

			// The advice does what it says.
			cmds := regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(err.Error(), -1)
			var see, take string
			for _, m := range cmds {
				switch {
				case strings.Contains(m[1], " diff "):
					see = m[1]
				case strings.Contains(m[1], " checkout ") || strings.Contains(m[1], " update-index "):
					take = m[1]
				}
			}
			if take == "" || (see == "") != (len(c.kept) == len(c.deleted)) {
				t.Fatalf("the error does not say how to see and take the branch's version: %v", err)
			}
			if see != "" {
				diff := sh(t, see)
				for _, p := range c.kept {
					if _, inNew := newTree[p]; inNew && !strings.Contains(diff, "diff --git a/"+p+" b/"+p) {
						t.Errorf("%s does not show %s:\n%s", see, p, diff)
					}
				}
			}
			sh(t, take)
			after = worktreeFiles(t, dir)
			for _, p := range union(before, after, newTree) {
				if inPush(p) && (after[p] != newTree[p]) {
					t.Errorf("after %s, %s is %+v, the branch has %+v", take, p, after[p], newTree[p])
				}
			}
			for _, p := range []string{"keep.txt", "notes.txt"} {
				if after[p] != before[p] {
					t.Errorf("after %s, the user's %s is %+v", take, p, after[p])
				}
			}
			for _, p := range statusPaths(t, dir) {
				if inPush(p) {
					t.Errorf("after %s, git status still shows %s", take, p)
				}
			}
			if got := run(t, dir, nil, nil, "diff", "--cached", "--name-only"); got != "" {
				t.Errorf("after %s, the index differs from the branch at %s", take, got)
			}
		})
	}
}

// Once the branch is not where the interrupted push left it in that
// working tree, recovery writes nothing there. The user switched the
// working tree to another branch, or detached it, at the old commit: the
// push's journal is dropped (git gives them the pushed commit when they
// switch back), and the files stay the old commit's. Or they committed on
// the branch: the journal stays, and the error says what to do.
func TestRecoveryWritesNothingOnceTheBranchMovedOn(t *testing.T) {
	template, old, new := pushTemplate(t)
	cases := []struct {
		name    string
		move    []string // git command
		wantErr bool
	}{
		{"switched to another branch", []string{"switch", "-q", "-f", "-c", "other", old.String()}, false},
		{"detached", []string{"switch", "-q", "-f", "--detach", old.String()}, false},
		{"committed on the branch", []string{"commit", "-q", "-am", "mine"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := interrupted(t, template, old, new)
			run(t, dir, nil, nil, c.move...)
			writeFiles(t, dir, map[string]string{"keep.txt": "keep: mine, again\n"})
			before, index := worktreeFiles(t, dir), run(t, dir, nil, nil, "ls-files", "-s")
			_, err := targets.OpenLocal(context.Background(), dir)
			if (err != nil) != c.wantErr {
				t.Fatalf("recovery: %v", err)
			}
			if got := worktreeFiles(t, dir); !reflect.DeepEqual(got, before) {
				t.Errorf("recovery changed the working tree:\n%v\nwas\n%v", got, before)
			}
			if got := run(t, dir, nil, nil, "ls-files", "-s"); got != index {
				t.Errorf("recovery changed the index:\n%s\nwas\n%s", got, index)
			}
			if _, err := os.Stat(targets.JournalPath(dir)); os.IsNotExist(err) == c.wantErr {
				t.Errorf("the journal: %v", err)
			}
		})
	}
}

func union(ms ...map[string]targetFile) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for p := range m {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// statusPaths lists the paths git status shows, untracked directories
// without their trailing slash.
func statusPaths(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, e := range strings.Split(run(t, dir, nil, nil, "status", "--porcelain", "-z", "--untracked-files=all"), "\x00") {
		if len(e) > 3 {
			out = append(out, strings.TrimSuffix(e[3:], "/"))
		}
	}
	return out
}

// sh runs a command from an error message as a user would paste it.
func sh(t *testing.T, cmd string) string {
	t.Helper()
	c := exec.Command("sh", "-c", cmd)
	c.Env = gitEnv()
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return string(out)
}

// Recovery never clobbers, with real kills: a pushing process is killed
// with SIGKILL while it rolls a checked-out branch forward (its journal
// written, the branch moved, the files part-way), the user then edits
// files of the push (modifies, deletes, recreates what it deleted, creates
// what it creates) and one outside it, and the target is opened again. No
// edit is overwritten, and the error names exactly the edited paths of the
// push; everything else is at the pushed commit; git status shows only the
// edits; git fsck --strict is clean.
func TestRecoveryAfterSIGKILLKeepsEdits(t *testing.T) {
	t.Parallel() // long and independent: alongside the others, the package stays well within Go's default timeout
	if os.Getenv("AIRLOCK_KILL_CHILD") != "" {
		t.Skip("child")
	}
	runs := runsOf(5, 30, 2)
	template := t.TempDir()
	run(t, template, nil, nil, "init", "-q", "-b", "main", ".")
	files := map[string]string{}
	for i := 0; i < 300; i++ {
		files[fmt.Sprintf("d%d/f%03d.txt", i%10, i)] = fmt.Sprintf("base %d\n", i)
	}
	base := (&gitInspector{dir: template, worktree: template}).Commit(t, "main", toFiles(files))

	// start runs the pushing child on a copy of the template and returns
	// once the branch has moved (false: the child ended first).
	type child struct {
		dir   string
		cmd   *exec.Cmd
		done  chan struct{}
		moved time.Time
	}
	start := func() (*child, bool) {
		c := &child{dir: copyRepo(t, template), done: make(chan struct{})}
		var pushing <-chan struct{}
		c.cmd, pushing = startKillChild(t, c.dir, "worktree")
		go func() { c.cmd.Wait(); close(c.done) }()
		<-pushing
		ref := filepath.Join(c.dir, ".git", "refs", "heads", "main")
		for {
			if b, _ := os.ReadFile(ref); len(b) > 0 && strings.TrimSpace(string(b)) != base.String() {
				c.moved = time.Now()
				return c, true
			}
			select {
			case <-c.done:
				return c, false
			case <-time.After(200 * time.Microsecond):
			}
		}
	}
	// How long the roll-forward takes (with the child's exit), to spread
	// the kills over it.
	c, ok := start()
	if !ok {
		t.Fatal("an uninterrupted push did not move the branch")
	}
	for rolling := true; rolling; {
		if _, err := os.Stat(targets.JournalPath(c.dir)); os.IsNotExist(err) {
			break
		}
		select {
		case <-c.done:
			rolling = false
		case <-time.After(200 * time.Microsecond):
		}
	}
	rollForward := time.Since(c.moved)
	<-c.done
	if !c.cmd.ProcessState.Success() {
		t.Fatalf("an uninterrupted push failed: %v", c.cmd.ProcessState)
	}
	if _, err := os.Stat(targets.JournalPath(c.dir)); !os.IsNotExist(err) {
		t.Fatalf("an uninterrupted push left its journal: %v", err)
	}

	killed, attempts := 0, 0
	for killed < runs {
		if attempts++; attempts > 4*runs {
			t.Fatalf("only %d of %d kills came during the roll-forward (it takes about %v)", killed, attempts-1, rollForward)
		}
		c, moved := start()
		if moved {
			time.Sleep(time.Duration(rand.Int64N(int64(rollForward)*2/3 + 1)))
		}
		c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.done
		waitGroupGone(t, c.cmd.Process.Pid)
		if _, err := os.Stat(targets.JournalPath(c.dir)); err != nil || !moved {
			continue // not during the roll-forward
		}
		killed++
		checkKeptAfterKill(t, c.dir, base)
	}
	t.Logf("%d kills during the roll-forward in %d attempts (it takes about %v)", killed, attempts, rollForward)
}

// checkKeptAfterKill edits files of the interrupted push in dir as a user
// would, reopens the target and checks that recovery kept exactly those.
func checkKeptAfterKill(t *testing.T, dir string, base plumbing.Hash) {
	t.Helper()
	want, _ := os.ReadFile(filepath.Join(dir, "..", "new-commit"))
	pushed := plumbing.NewHash(strings.TrimSpace(string(want)))
	edited := map[string]bool{}
	var kept []string
	for _, i := range rand.Perm(300)[:12] {
		p := fmt.Sprintf("d%d/f%03d.txt", i%10, i)
		full := filepath.Join(dir, p)
		switch {
		case i%3 == 0 && i%2 == 0: // the push changes it
			os.Remove(full)
		case i%3 != 2: // the push changes or deletes it
			writeFiles(t, dir, map[string]string{p: fmt.Sprintf("the user's %d\n", i)})
		default: // outside the push
			writeFiles(t, dir, map[string]string{p: fmt.Sprintf("the user's %d\n", i)})
			edited[p] = true
			continue
		}
		edited[p] = true
		kept = append(kept, p)
	}
	for _, i := range rand.Perm(300)[:3] { // the push creates it
		p := fmt.Sprintf("new/n%03d.txt", i)
		writeFiles(t, dir, map[string]string{p: "the user's new file\n"})
		edited[p] = true
		kept = append(kept, p)
	}
	sort.Strings(kept)
	before := worktreeFiles(t, dir)

	_, err := targets.OpenLocal(context.Background(), dir)
	var ke *targets.KeptError
	if !errors.As(err, &ke) || !reflect.DeepEqual(ke.Paths, kept) || ke.New != pushed {
		t.Fatalf("reopening after the kill: %v; want the edits at %v kept", err, kept)
	}
	insp := &gitInspector{dir: dir}
	if head := insp.Head(t, "main"); head != pushed {
		t.Fatalf("main is at %s, not the pushed %s (it was at %s)", head, pushed, base)
	}
	newTree := insp.Tree(t, pushed)
	after := worktreeFiles(t, dir)
	for _, p := range union(before, after, newTree) {
		b, bok := before[p]
		a, aok := after[p]
		n, nok := newTree[p]
		switch {
		case edited[p]:
			if a != b || aok != bok {
				t.Fatalf("the user's edit at %s was overwritten: %+v (%v), the user had %+v (%v)", p, a, aok, b, bok)
			}
		case a != n || aok != nok:
			t.Fatalf("%s is %+v (%v), the pushed commit has %+v (%v)", p, a, aok, n, nok)
		}
	}
	for _, p := range statusPaths(t, dir) {
		if !edited[p] {
			t.Errorf("git status shows %s, which the user did not edit", p)
		}
	}
	insp.Fsck(t)
	if refs := run(t, dir, nil, nil, "for-each-ref", "refs/airlock/"); refs != "" {
		t.Fatalf("temporary refs left behind:\n%s", refs)
	}
	if _, err := os.Stat(targets.JournalPath(dir)); !os.IsNotExist(err) {
		t.Fatalf("the journal is still there: %v", err)
	}
}

// A push to a checked-out branch finds its paths clean, then takes a while
// to send its objects: an edit the user makes then, to a file the push
// changes, is kept too. The push landed (a WorktreeError, which says so)
// and its error names the kept file and how to take the branch's version.
func TestPushKeepsEditsMadeWhileItLands(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, dir, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	run(t, dir, nil, nil, "add", "-A")
	run(t, dir, nil, nil, "commit", "-qm", "base")
	// A pre-receive hook of the test's own runs when the objects come in,
	// after the check for uncommitted changes: the user's edit, then. (A
	// repository's own hooks never run.)
	hooks := t.TempDir()
	targets.SetTestHooks(t, hooks)
	hook := filepath.Join(hooks, "pre-receive")
	script := "#!/bin/sh\nprintf 'edited during the push\\n' > '" + filepath.Join(dir, "a.txt") + "'\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tgt, err := targets.OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile("a.txt", []byte("a from the worker\n"), 0o644)
	sb.ws.WriteFile("b.txt", []byte("b from the worker\n"), 0o644)
	id, err := sb.push(t, tgt, "refs/heads/main", head)
	var wt *targets.WorktreeError
	var kept *targets.KeptError
	if !errors.As(err, &wt) || wt.New != id || !errors.As(err, &kept) || !reflect.DeepEqual(kept.Paths, []string{"a.txt"}) {
		t.Fatalf("push: %v; want a landed push that kept a.txt", err)
	}
	if !errors.Is(err, targets.ErrWorktreeNotUpdated) || !errors.Is(err, targets.ErrEditsKept) || strings.Contains(err.Error(), "read-tree") {
		t.Errorf("push: %v", err)
	}
	if got := strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "main")); got != id.String() {
		t.Fatalf("main is at %s, not the pushed %s", got, id)
	}
	files := worktreeFiles(t, dir)
	if files["a.txt"].Data != "edited during the push\n" || files["b.txt"].Data != "b from the worker\n" {
		t.Errorf("the working tree: %+v", files)
	}
	if st := run(t, dir, nil, nil, "status", "--porcelain"); st != " M a.txt\n" {
		t.Errorf("git status:\n%s", st)
	}
	if _, err := os.Stat(targets.JournalPath(dir)); !os.IsNotExist(err) {
		t.Errorf("the journal is still there: %v", err)
	}
}
