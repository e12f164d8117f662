package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
)

// renameRepo is a repository with a file of 484 lines (as cobra's
// command.go was when a rename of it read -484/+484) and a few more.
func renameRepo(t *testing.T) (string, string) {
	var b strings.Builder
	for i := 1; i <= 484; i++ {
		fmt.Fprintf(&b, "\t// line %d of the command\n", i)
	}
	root := b.String()
	return repo(t, false, map[string]string{"command.go": root, "keep.txt": "keep\n", "old/notes.txt": "a\nb\nc\nd\ne\nf\ng\nh\n"}), root
}

// renameAndEdit renames command.go to cmd/command.go with three lines
// edited far apart (three hunks) and moves old/notes.txt unchanged.
func renameAndEdit(t *testing.T, e *env, root string) {
	ws := e.s.Workspace()
	must(t, ws.Rename("command.go", "cmd_command.go"))
	edited := strings.Replace(root, "line 10 of", "line ten of", 1)
	edited = strings.Replace(edited, "line 200 of", "line two hundred of", 1)
	edited = strings.Replace(edited, "line 480 of", "line 480 (edited) of", 1)
	e.write(t, "cmd_command.go", edited)
	must(t, ws.Rename("old/notes.txt", "notes.txt"))
}

// Issue 33: a rename with 3 edited lines showed as -484/+484, a deletion
// and a creation. The request now shows it as git diff -M -C does: one
// file, renamed from its old path, +3 -3, the diff byte for byte git's
// of what lands, and no deletion flagged.
func TestPushShowsARenameAsGitDoes(t *testing.T) {
	path, root := renameRepo(t)
	e := newEnv(t, path, config{})
	renameAndEdit(t, e, root)
	_, err := e.s.Stage(nil, "Move the command")
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "", nil)
		done <- err
	}()
	req := waitPending(t, e.gate, 1)[0]
	if len(req.Files) != 2 {
		t.Fatalf("files %+v: want the two renames", req.Files)
	}
	f := req.Files[0]
	if f.Path != "cmd_command.go" || f.Op != change.Rename || f.From != "command.go" || f.Added != 3 || f.Deleted != 3 || f.Similarity != 99 {
		t.Errorf("file %+v: want cmd_command.go renamed from command.go, 99%%, +3 -3", f)
	}
	if g := req.Files[1]; g.Path != "notes.txt" || g.Op != change.Rename || g.From != "old/notes.txt" || g.Added+g.Deleted != 0 {
		t.Errorf("file %+v: want notes.txt renamed from old/notes.txt unchanged", g)
	}
	if req.Added != 3 || req.Deleted != 3 || req.Summary() != "2 files, +3 -3" {
		t.Errorf("+%d -%d (%s): want +3 -3", req.Added, req.Deleted, req.Summary())
	}
	for _, fl := range req.Flags {
		if fl.Code == approval.FlagDeletions {
			t.Errorf("a rename flagged as a deletion: %+v", fl)
		}
	}
	hunks := req.Commits[0].Files
	if len(hunks) != 2 || hunks[0].From != "command.go" || len(hunks[0].Hunks) != 3 {
		t.Errorf("the commit's files %+v: want the rename's three hunks against command.go", hunks)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-done)
	if want := git(t, path, "diff", "-M", "-C", "--no-color", "main~1", "main"); req.Diff != want {
		t.Errorf("the request's diff is not git diff -M -C of what landed:\n%s\nwant:\n%s", req.Diff, want)
	}
	if got, want := fmt.Sprintf("%d\t%d", req.Added, req.Deleted), git(t, path, "diff", "-M", "-C", "--shortstat", "main~1", "main"); !strings.Contains(want, "3 insertions(+), 3 deletions(-)") {
		t.Errorf("git counts %q, the request %s", want, got)
	}
}

// A reviewer's pick of one hunk of a renamed file lands the rename with
// that edit alone: what git apply --cached makes of the shown header and
// the accepted hunk on the target's commit. A pick of the renamed file
// by path takes the old name away too.
func TestPickOfARenamedFile(t *testing.T) {
	for _, byPath := range []bool{false, true} {
		t.Run(map[bool]string{false: "one hunk", true: "by path"}[byPath], func(t *testing.T) {
			path, root := renameRepo(t)
			e := newEnv(t, path, config{})
			renameAndEdit(t, e, root)
			_, err := e.s.Stage(nil, "Move the command")
			must(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := e.s.Push(context.Background(), "", "", nil)
				done <- err
			}()
			req := waitPending(t, e.gate, 1)[0]
			fd := req.Commits[0].Files[0]
			dec := approval.Decision{Request: req.ID, Verdict: approval.Pick}
			patch := fd.Header + fd.Hunks[1]
			if byPath {
				dec.Paths = []string{"cmd_command.go"}
				patch = fd.Header + strings.Join(fd.Hunks, "")
			} else {
				dec.Accept = []approval.Accepted{{Commit: req.Commits[0].ID, Files: []approval.AcceptedFile{
					{Path: "cmd_command.go", Hunks: []approval.AcceptedHunk{{Index: 1, ID: approval.HunkID(fd.Hunks[1])}}}}}}
			}
			_, err = e.gate.Resolve(dec)
			must(t, err)
			<-done
			// git apply --cached of the same text, on the commit the push
			// went onto, in a clone.
			clone := t.TempDir()
			git(t, clone, "clone", "-q", path, ".")
			git(t, clone, "reset", "-q", "main~1")
			pf := filepath.Join(t.TempDir(), "pick.patch")
			must(t, os.WriteFile(pf, []byte(patch), 0o644))
			git(t, clone, "apply", "--cached", pf)
			want := strings.TrimSpace(git(t, clone, "write-tree"))
			if got := strings.TrimSpace(git(t, path, "rev-parse", "main^{tree}")); got != want {
				t.Fatalf("landed %s\n%s; git apply --cached makes %s\n%s", got, git(t, path, "ls-tree", "-r", "main"), want, git(t, clone, "ls-files", "-s"))
			}
			if out := git(t, path, "ls-tree", "main", "command.go"); out != "" {
				t.Errorf("the renamed file's old name is still there: %s", out)
			}
		})
	}
}

// A re-review after a rejection, where the worker then renamed the file
// it had pushed: the interdiff shows the rename as git does (from the
// file the reviewer saw, to its new name), not the file deleted and
// another created.
func TestInterdiffShowsARename(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "report line %d\n", i)
	}
	e.write(t, "draft.md", b.String())
	_, err := e.s.Stage(nil, "Draft")
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	first := waitPending(t, e.gate, 1)[0]
	_, err = e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Reject, Reason: "name it report.md"})
	must(t, err)
	<-done
	must(t, e.s.Workspace().Rename("draft.md", "report.md"))
	e.write(t, "report.md", strings.Replace(b.String(), "report line 7\n", "report line seven\n", 1))
	_, err = e.s.Stage(nil, "Report")
	must(t, err)
	go func() { _, err := e.s.Push(context.Background(), "", "", nil); done <- err }()
	second := waitPending(t, e.gate, 1)[0]
	sn := second.Since
	if sn == nil || !strings.Contains(sn.Interdiff, "rename from draft.md\nrename to report.md\n") || !strings.Contains(sn.Interdiff, "-report line 7\n+report line seven\n") ||
		strings.Contains(sn.Interdiff, "deleted file") {
		t.Fatalf("interdiff:\n%+v", sn)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: second.ID, Verdict: approval.Reject})
	must(t, err)
	<-done
}
