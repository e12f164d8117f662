package review_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// evilLines is a file whose lines, in a diff, look like diff syntax: a
// removed "-- a/x" reads "--- a/x" and an added "++ b/x" reads "+++ b/x"
// (a second file's header inside a hunk), "@@" lines (a second hunk), a
// "diff --git" line, a "\ No newline" line that is content, and terminal
// escapes; its last line has no newline.
func evilLines(edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= 24; i++ {
		l, ok := edit[i]
		if !ok {
			l = fmt.Sprintf("line %d", i)
		}
		b.WriteString(l)
		if i < 24 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestPickHostileContentFromTheServer: a real session's push of such a
// file, walked in the review prompt hunk by hunk and line by line: the
// prompt asks about exactly the server's hunks and changed lines, shows
// them escaped, and what lands is exactly git apply --cached of the
// hunks (and lines) it accepted.
func TestPickHostileContentFromTheServer(t *testing.T) {
	base := evilLines(map[int]string{2: "-- a/fake", 20: `\ No newline at end of file`})
	src := t.TempDir()
	gittest.InitRepo(t, gittest.Env(), src, "init", map[string]string{"evil.txt": base})
	bare := filepath.Join(t.TempDir(), "project.git")
	gittest.Git(t, src, "clone", "-q", "--bare", src, bare)
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}, Targets: map[string]*worker.TargetSpec{},
		AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}}},
	}
	gate := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	s, err := session.New(context.Background(), w, session.Options{Gate: gate, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	call := func(tool string, args map[string]any) string {
		t.Helper()
		raw, _ := json.Marshal(args)
		out, err := gittools.Call(context.Background(), s, tool, raw, nil)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return out
	}
	first := map[int]string{2: "++ b/fake", 20: `\ No newline at end of file`,
		21: "@@ -1,2 +1,2 @@\ndiff --git a/x b/x\n\x1b[2J\x1b]0;pwned\x07line 21", 24: "line 24!"}
	call("write_file", map[string]any{"path": "evil.txt", "content": evilLines(first)})
	call("git_stage", map[string]any{"message": "Make it look like a diff"})
	second := map[int]string{2: "++ b/fake", 10: "@@ -10 +10 @@\n\\ No newline at end of file", 20: `\ No newline at end of file`,
		21: "@@ -1,2 +1,2 @@\ndiff --git a/x b/x\n\x1b[2J\x1b]0;pwned\x07line 21", 24: "line 24!\n"}
	call("write_file", map[string]any{"path": "evil.txt", "content": evilLines(second)})
	call("git_stage", map[string]any{"message": "More of it"})
	done := make(chan error, 1)
	go func() {
		raw, _ := json.Marshal(map[string]any{})
		_, err := gittools.Call(context.Background(), s, "git_push", raw, nil)
		done <- err
	}()
	var req *approval.Request
	for deadline := time.Now().Add(10 * time.Second); req == nil; time.Sleep(5 * time.Millisecond) {
		if p := gate.Pending(); len(p) == 1 {
			req = p[0]
		} else if time.Now().After(deadline) {
			t.Fatal("no request came")
		}
	}
	// The reviewer accepts the first commit whole, hunk by hunk, and of
	// the second leaves out its first hunk, splits its last and takes
	// every other line of it.
	keys := []rune{'p'}
	var changed []string
	nth := 0
	for ci, c := range req.Commits {
		for _, f := range c.Files {
			for i, h := range f.Hunks {
				lines, err := hunk.Changed(h)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case ci == 0:
					keys = append(keys, 'y')
				case i == len(f.Hunks)-1:
					keys = append(keys, 's')
					for n := range lines {
						keys = append(keys, []rune("yn")[n%2])
					}
					changed = append(changed, lines...)
				default:
					keys = append(keys, 'n')
				}
				nth++
			}
		}
	}
	keys = append(keys, 'y')
	script := &approvaltest.Script{Keys: keys, Lines: []string{"yes"}, TTY: true} // a high risk: the escape
	d, err := review.Prompt(script, req)
	if err != nil {
		t.Fatalf("%v\n%s", err, script.Out.String())
	}
	out := script.Out.String()
	if len(script.Keys) != 0 || d.Verdict != approval.Pick {
		t.Fatalf("the prompt asked other questions than the server's hunks and lines (keys left %q, verdict %s):\n%s", string(script.Keys), d.Verdict, out)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("the prompt wrote a worker's escape to the terminal:\n%q", out)
	}
	if got, want := strings.Count(out, "Accept this hunk of evil.txt"), nth; got != want {
		t.Errorf("the prompt asked about %d hunks, the server sent %d:\n%s", got, want, out)
	}
	// Each line the prompt asked about is the server's changed line.
	for i, l := range changed {
		if !strings.Contains(out, "    "+termsafe.Text(l)+"\n  line ") {
			t.Errorf("changed line %d %q was not asked about as the server has it:\n%s", i, l, out)
		}
	}
	d.Request = req.ID
	if _, err := gate.Resolve(d); err != nil {
		t.Fatalf("Resolve: %v\n%s", err, out)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// What landed is git apply --cached of what was accepted.
	clone := t.TempDir()
	gittest.Git(t, clone, "clone", "-q", src, ".")
	var want []string
	for _, c := range req.Commits {
		for _, a := range d.Accept {
			if a.Commit != c.ID {
				continue
			}
			var patch strings.Builder
			for _, af := range a.Files {
				for _, fd := range c.Files {
					if fd.Path != af.Path {
						continue
					}
					patch.WriteString(fd.Header)
					for _, ah := range af.Hunks {
						text := fd.Hunks[ah.Index]
						if len(ah.Lines) > 0 {
							if text, err = hunk.Select(text, ah.Lines); err != nil {
								t.Fatal(err)
							}
						}
						patch.WriteString(text)
					}
				}
			}
			pf := filepath.Join(t.TempDir(), "p.diff")
			if err := os.WriteFile(pf, []byte(patch.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("git", "apply", "--cached", pf)
			cmd.Dir, cmd.Env = clone, gittest.Env()
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v: %s\n%s", err, msg, patch.String())
			}
			want = append(want, strings.TrimSpace(gittest.Git(t, clone, "write-tree")))
		}
	}
	got := strings.Fields(gittest.Git(t, bare, "log", "--reverse", "--format=%T", fmt.Sprintf("main~%d..main", len(want))))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("landed trees %v, git apply of what was accepted makes %v", got, want)
	}
}
