package session_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
)

// listing is what a run sees of the workspace: every file and link with
// its mode and a hash of its content (a link's target).
const listing = `find . \( -type f -o -type l \) -printf '%P %m ' -exec sh -c 'if [ -L "$1" ]; then readlink "$1" | tr -d "\n" | sha1sum; else sha1sum < "$1"; fi' _ {} \; | sed 's/  -$//' | sort`

// wantListing is listing as the workspace says it should be.
func wantListing(t *testing.T, ws *memfs.Workspace) string {
	t.Helper()
	var lines []string
	err := ws.Snapshot().Walk(func(e memfs.Entry) error {
		data, err := e.Content()
		if err != nil {
			return err
		}
		mode := e.Mode.Perm()
		if e.Mode&fs.ModeSymlink != 0 {
			mode = 0o777
		}
		lines = append(lines, fmt.Sprintf("%s %o %x", e.Path, mode, sha1.Sum(data)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// Between runs the mirror keeps what a run wrote instead of writing it
// again (Promote), and what the workspace did not take is written again:
// whatever happened, each run sees exactly the workspace, no more.
func TestEachRunSeesTheWorkspace(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "a/base.txt": "base\n", "keep/k.txt": "k\n"})
	g := newRunGate(t)
	e := runEnv(t, r, session.RunOptions{ReadOnly: []string{g.dir}}, config{})
	ws := e.s.Workspace()
	run := func(cmd string) session.RunResult {
		t.Helper()
		res, err := e.s.Run(context.Background(), session.RunArgs{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return res
	}
	check := func(step string) {
		t.Helper()
		res := run(listing)
		if want := wantListing(t, ws); res.Stdout != want {
			t.Fatalf("%s: the run sees\n%s\nthe workspace holds\n%s", step, res.Stdout, want)
		}
	}
	steps := []struct {
		name string
		run  string
		tool func()
	}{
		{name: "files, a directory and a link made", run: "mkdir -p new/deep && echo 1 > new/deep/one && echo x > x && ln -s x l && echo more >> a/base.txt"},
		{name: "edited and deleted by tools", tool: func() {
			must(t, ws.WriteFile("new/deep/one", []byte("by a tool\n"), 0o644))
			must(t, ws.Remove("x"))
		}},
		{name: "a denied file and a private mode", run: "echo SECRET=1 > .env && mkdir o && for i in $(seq 50); do echo $i > o/f$i; done && chmod 600 o/f1 && chmod 700 o/f2"},
		{name: "a directory removed", run: "rm -rf o"},
		{name: "a directory replaced by a file", run: "rm -rf a && echo now a file > a"},
		{name: "a file replaced by a directory", run: "rm a && mkdir -p a/b && echo in > a/b/c"},
		{name: "a new directory, one of its files then changed by a tool", run: "mkdir p && echo 1 > p/1 && echo 2 > p/2"},
		{name: "the tool's change", tool: func() { must(t, ws.WriteFile("p/2", []byte("tool\n"), 0o644)) }},
		{name: "a tool's edits while a command runs", tool: func() {
			done := make(chan struct{})
			go func() {
				defer close(done)
				run(g.wait() + "echo ran > ran.txt")
			}()
			g.started(t)
			must(t, ws.WriteFile("during.txt", []byte("written during the run\n"), 0o644))
			must(t, ws.WriteFile("keep/k.txt", []byte("changed during the run\n"), 0o644))
			g.resume(t)
			<-done
		}},
		{name: "checkpoint rolled back", tool: func() {
			cps := ws.Checkpoints()
			if _, err := e.s.Rollback(cps[0].Name); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, st := range steps {
		if st.run != "" {
			run(st.run)
		}
		if st.tool != nil {
			st.tool()
		}
		check(st.name)
	}
}
