package gittools_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/worker"
)

// numbered is n lines "<name> line i", with edit's lines replaced.
func numbered(name string, n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s)
			continue
		}
		fmt.Fprintf(&b, "%s line %d\n", name, i)
	}
	return b.String()
}

// acceptProject is a bare repository holding the files a two-commit push
// changes, and a session whose worker pulls and pushes it.
func acceptProject(t *testing.T, decide func(*approval.Request) approval.Decision) *harness {
	t.Helper()
	src := t.TempDir()
	gittest.InitRepo(t, gittest.Env(), src, "init", map[string]string{
		"README.md":   numbered("readme", 30, nil),
		"parser.go":   numbered("parser", 40, nil),
		"config.yaml": numbered("config", 8, nil),
		"main.go":     numbered("main", 20, nil),
	})
	bare := filepath.Join(t.TempDir(), "project.git")
	git(t, src, "clone", "-q", "--bare", src, bare)
	spec := &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{},
		AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}}},
	}
	return openSession(t, w, approval.Policy{}, decide)
}

// stageTwoCommits makes the worker's push: two commits across five
// files, the first of three files with five hunks, the second of three
// files (one new) with three.
func stageTwoCommits(h *harness) {
	h.call("write_file", map[string]any{"path": "README.md", "content": numbered("readme", 30, map[int]string{2: "An intro.\n", 28: "See LICENSE.\n"})})
	h.call("write_file", map[string]any{"path": "parser.go", "content": numbered("parser", 40, map[int]string{3: "func Parse() {}\n", 35: "// end of parser\n"})})
	h.call("write_file", map[string]any{"path": "config.yaml", "content": numbered("config", 8, map[int]string{4: "debug: true\n"})})
	h.call("git_stage", map[string]any{"message": "Add the parser and tidy the README\n\nThe README gains an intro and a pointer to the licence."})
	h.call("write_file", map[string]any{"path": "parser.go", "content": numbered("parser", 40, map[int]string{3: "func Parse() {}\n", 20: "// errors are wrapped\n", 35: "// end of parser\n"})})
	h.call("write_file", map[string]any{"path": "main.go", "content": numbered("main", 20, map[int]string{10: "\tlog.Fatal(err)\n\tos.Exit(1)\n"})})
	h.call("write_file", map[string]any{"path": "notes.txt", "content": "Errors are wrapped with %w.\n"})
	h.call("git_stage", map[string]any{"message": "Handle errors and document them"})
}

// accept names hunk index of path in the request's commit whose subject is
// subject, as a reviewer's client would: by its place and content id.
func accept(t *testing.T, req *approval.Request, subject, path string, index int, lines ...int) (approval.Accepted, approval.AcceptedFile) {
	t.Helper()
	for _, c := range req.Commits {
		if !strings.HasPrefix(c.Message, subject) {
			continue
		}
		for _, f := range c.Files {
			if f.Path == path && index < len(f.Hunks) {
				return approval.Accepted{Commit: c.ID}, approval.AcceptedFile{Path: path,
					Hunks: []approval.AcceptedHunk{{Index: index, ID: approval.HunkID(f.Hunks[index]), Lines: lines}}}
			}
		}
	}
	t.Fatalf("the request has no hunk %d of %s in %q: %+v", index, path, subject, req.Commits)
	return approval.Accepted{}, approval.AcceptedFile{}
}

// selection gathers accepted hunks by commit, in the request's order.
func selection(req *approval.Request, picks ...func() (approval.Accepted, approval.AcceptedFile)) []approval.Accepted {
	var out []approval.Accepted
	for _, c := range req.Commits {
		var a *approval.Accepted
		for _, p := range picks {
			ac, f := p()
			if ac.Commit != c.ID {
				continue
			}
			if a == nil {
				out = append(out, ac)
				a = &out[len(out)-1]
			}
			a.Files = append(a.Files, f)
		}
	}
	return out
}

// targetLog is the target's history since init as git prints it, with
// what does not repeat from run to run (ids of commits, dates) left out.
func targetLog(t *testing.T, bare string) string {
	return git(t, bare, "log", "-p", "--format=commit by %an <%ae>%n%n%B", "main~2..main")
}

// The goal: a reviewer picks 3 hunks of a 2-commit, 5-file push
// and the target receives two commits with the right messages and exactly
// those hunks; the worker is told which commits landed and what stayed in
// its sandbox, and the ledger records the hunks by content id.
func TestAcceptThreeHunksOfTwoCommits(t *testing.T) {
	var asked *approval.Request
	h := acceptProject(t, func(req *approval.Request) approval.Decision {
		asked = req
		return approval.Decision{Verdict: approval.Pick, Accept: selection(req,
			func() (approval.Accepted, approval.AcceptedFile) {
				return accept(t, req, "Add the parser", "README.md", 0)
			},
			func() (approval.Accepted, approval.AcceptedFile) {
				return accept(t, req, "Add the parser", "parser.go", 1)
			},
			func() (approval.Accepted, approval.AcceptedFile) {
				return accept(t, req, "Handle errors", "main.go", 0)
			})}
	})
	stageTwoCommits(h)
	out := h.call("git_push", nil)
	if !asked.Pickable || len(asked.Files) != 5 || len(asked.Commits) != 2 {
		t.Fatalf("the request: pickable %v, %d files, %d commits", asked.Pickable, len(asked.Files), len(asked.Commits))
	}
	got := targetLog(t, h.repo)
	golden := filepath.Join("testdata", "accept_three_hunks.golden")
	if *update {
		must(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if got != string(want) {
		t.Errorf("the target's git log -p:\n%s\nwant (%s):\n%s", got, golden, want)
	}
	if n := strings.TrimSpace(git(t, h.repo, "rev-list", "--count", "main")); n != "3" {
		t.Errorf("the target has %s commits, want init and two", n)
	}
	mustContain(t, "the push's answer", out, "these commits landed:", "Add the parser and tidy the README", "Handle errors and document them",
		"left unstaged in your sandbox, not accepted: README.md (1 hunk), config.yaml (1 hunk), notes.txt (1 hunk), parser.go (2 hunks)")
	mustContain(t, "status after the push", h.call("git_status", nil), "staged: nothing", "README.md", "config.yaml", "notes.txt", "parser.go")
	// The ledger's decision names the hunks by content id, and the
	// commits made of them.
	recs, err := ledger.Records(h.l.Path())
	must(t, err)
	var dec approval.Decision
	for _, r := range recs {
		if r.Kind == ledger.KindDecision {
			must(t, json.Unmarshal(r.Data, &dec))
		}
	}
	ids := map[string]bool{}
	for _, a := range dec.Accept {
		for _, f := range a.Files {
			for _, hk := range f.Hunks {
				ids[hk.ID] = true
			}
		}
	}
	_, readme := accept(t, asked, "Add the parser", "README.md", 0)
	if len(ids) != 3 || !ids[readme.Hunks[0].ID] || len(dec.Commits) != 2 || dec.New != dec.Commits[1] {
		t.Errorf("the ledger's decision: %+v", dec)
	}
	if head := strings.TrimSpace(git(t, h.repo, "rev-parse", "main")); head != dec.New.String() {
		t.Errorf("the target is at %s, the decision let %s through", head, dec.New)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A commit nothing of which is accepted is not pushed, and the worker is
// told so; a message the reviewer edits is the one that lands.
func TestAcceptLeavesACommitOutAndEditsAMessage(t *testing.T) {
	h := acceptProject(t, func(req *approval.Request) approval.Decision {
		sel := selection(req, func() (approval.Accepted, approval.AcceptedFile) {
			return accept(t, req, "Handle errors", "main.go", 0)
		})
		sel[0].Message = "Exit on errors\n\nmain.go stops at the first one."
		return approval.Decision{Verdict: approval.Pick, Accept: sel}
	})
	stageTwoCommits(h)
	out := h.call("git_push", nil)
	if got := git(t, h.repo, "log", "--format=%B", "main~1..main"); got != "Exit on errors\n\nmain.go stops at the first one.\n\n" {
		t.Errorf("the landed commit's message: %q", got)
	}
	if n := strings.TrimSpace(git(t, h.repo, "rev-list", "--count", "main")); n != "2" {
		t.Errorf("the target has %s commits, want init and one", n)
	}
	if files := git(t, h.repo, "diff", "--name-only", "main~1", "main"); files != "main.go\n" {
		t.Errorf("the landed commit changes %q", files)
	}
	mustContain(t, "the push's answer", out, "pushed 1 commit", "Exit on errors", `"Add the parser and tidy the README" was left out whole: nothing of it was pushed`)
}

// A hunk split to lines lands exactly those lines: a "-" line left out
// stays, a "+" line left out is not added.
func TestAcceptLinesOfAHunk(t *testing.T) {
	h := acceptProject(t, func(req *approval.Request) approval.Decision {
		// main.go's hunk: "-main line 10", "+\tlog.Fatal(err)", "+\tos.Exit(1)".
		return approval.Decision{Verdict: approval.Pick, Accept: selection(req, func() (approval.Accepted, approval.AcceptedFile) {
			return accept(t, req, "Handle errors", "main.go", 0, 1)
		})}
	})
	stageTwoCommits(h)
	h.call("git_push", nil)
	if got, want := git(t, h.repo, "show", "main:main.go"), numbered("main", 20, map[int]string{10: "main line 10\n\tlog.Fatal(err)\n"}); got != want {
		t.Errorf("main.go on the target:\n%s\nwant\n%s", got, want)
	}
	if got := h.call("read_file", map[string]any{"path": "main.go"}); !strings.Contains(got, "os.Exit(1)") || strings.Contains(got, "main line 10\n") {
		t.Errorf("the worker's main.go changed:\n%s", got)
	}
}

// A hunk that needs a hunk of an earlier commit the reviewer left out is
// refused with an error saying which and what to do; nothing changes, and
// the reviewer can choose again.
func TestAcceptHunkThatNeedsALeftOutOne(t *testing.T) {
	h := acceptProject(t, nil)
	h.call("write_file", map[string]any{"path": "config.yaml", "content": numbered("config", 8, map[int]string{4: "debug: true\n"})})
	h.call("git_stage", map[string]any{"message": "Turn debugging on"})
	h.call("write_file", map[string]any{"path": "config.yaml", "content": numbered("config", 8, map[int]string{4: "debug: false\n"})})
	h.call("write_file", map[string]any{"path": "main.go", "content": numbered("main", 20, map[int]string{1: "package main\n"})})
	h.call("git_stage", map[string]any{"message": "Turn it off again"})
	before := h.call("git_status", nil)
	type answer struct {
		out string
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, err := h.try("git_push", nil)
		done <- answer{out, err}
	}()
	var req *approval.Request
	for deadline := time.Now().Add(10 * time.Second); req == nil; time.Sleep(10 * time.Millisecond) {
		if p := h.gate.Pending(); len(p) == 1 {
			req = p[0]
		} else if time.Now().After(deadline) {
			t.Fatal("no request came")
		}
	}
	_, err := h.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Accept: selection(req,
		func() (approval.Accepted, approval.AcceptedFile) {
			return accept(t, req, "Turn it off", "config.yaml", 0)
		})})
	if err == nil || !strings.Contains(err.Error(), "hunk 0 (@@ -1,7 +1,7 @@) of config.yaml in commit") ||
		!strings.Contains(err.Error(), `"Turn it off again"`) || !strings.Contains(err.Error(), "accept that earlier change too, or leave this hunk out") {
		t.Fatalf("Resolve: %v", err)
	}
	if len(h.gate.Pending()) != 1 {
		t.Fatal("the refused selection decided the request")
	}
	if now := h.call("git_status", nil); now != before {
		t.Errorf("the refused selection changed the sandbox:\n%s\nwas\n%s", now, before)
	}
	// Accepting the earlier hunk too, as the error says, works.
	_, err = h.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Accept: selection(req,
		func() (approval.Accepted, approval.AcceptedFile) {
			return accept(t, req, "Turn debugging on", "config.yaml", 0)
		},
		func() (approval.Accepted, approval.AcceptedFile) {
			return accept(t, req, "Turn it off", "config.yaml", 0)
		})})
	must(t, err)
	a := <-done
	must(t, a.err)
	if got := git(t, h.repo, "log", "--format=%s", "main"); got != "Turn it off again\nTurn debugging on\ninit\n" {
		t.Errorf("the target's log:\n%s", got)
	}
	mustContain(t, "the push's answer", a.out, "main.go (1 hunk)")
}
