package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
)

// A worker who renames the repository's CI workflow out of
// .github/workflows turns CI off as surely as one who deletes it: the
// request must say so, as it does for the deletion, and not show a quiet
// rename with no flag. The flag follows the file's new path, so a pick of
// the rename keeps it.
func TestRenameOutOfCIIsFlagged(t *testing.T) {
	wf := "name: ci\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n"
	for _, to := range []string{"ci.yml.off", "docs/old-ci.yml"} {
		t.Run(to, func(t *testing.T) {
			path := repo(t, false, map[string]string{".github/workflows/ci.yml": wf, "keep.txt": "keep\n"})
			e := newEnv(t, path, config{})
			must(t, e.s.Workspace().Rename(".github/workflows/ci.yml", to))
			_, err := e.s.Stage(nil, "Tidy")
			must(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := e.s.Push(context.Background(), "", "", nil)
				done <- err
			}()
			req := waitPending(t, e.gate, 1)[0]
			if len(req.Files) != 1 || req.Files[0].Op != change.Rename || req.Files[0].From != ".github/workflows/ci.yml" {
				t.Fatalf("files %+v: want the workflow renamed", req.Files)
			}
			var ci *approval.Flag
			for i, f := range req.Flags {
				if f.Code == approval.FlagCI {
					ci = &req.Flags[i]
				}
			}
			if ci == nil {
				t.Fatalf("flags %+v: the workflow renamed away raised no %s flag", req.Flags, approval.FlagCI)
			}
			if ci.Path != to || !strings.Contains(ci.Message, ".github/workflows/ci.yml") || !strings.Contains(ci.Message, to) {
				t.Errorf("flag %+v: want it on %s, naming both paths", ci, to)
			}
			if picked := approval.PickFlags(req, []string{to}, nil); !hasCode(picked, approval.FlagCI) {
				t.Errorf("a pick of the rename dropped the flag: %+v", picked)
			}
			_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject})
			must(t, err)
			<-done
		})
	}
}

func hasCode(flags []approval.Flag, code string) bool {
	for _, f := range flags {
		if f.Code == code {
			return true
		}
	}
	return false
}

// A rename that also makes the file executable, picked by one of its
// hunks: its content is what git apply --cached makes of the header the
// reviewer was shown and that hunk; its mode, as for any change taken in
// part (staging's acceptFile, git add -p asking a mode change apart), is
// the file's old one. The pick's flags said "makes run.sh executable"
// all the same: a flag false of what landed.
func TestPickOfARenameThatChangesMode(t *testing.T) {
	path, root := renameRepo(t)
	e := newEnv(t, path, config{})
	ws := e.s.Workspace()
	must(t, ws.Rename("command.go", "run.sh"))
	edited := strings.Replace(root, "line 10 of", "line ten of", 1)
	edited = strings.Replace(edited, "line 400 of", "line four hundred of", 1)
	must(t, ws.WriteFile("run.sh", []byte(edited), 0o755))
	must(t, ws.Chmod("run.sh", 0o755))
	_, err := e.s.Stage(nil, "Make the command a script")
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "", nil)
		done <- err
	}()
	req := waitPending(t, e.gate, 1)[0]
	fd := req.Commits[0].Files[0]
	if fd.From != "command.go" || len(fd.Hunks) != 2 || !strings.Contains(fd.Header, "new mode 100755") {
		t.Fatalf("the commit's file %+v: want a rename with a mode change and two hunks", fd)
	}
	dec := approval.Decision{Request: req.ID, Verdict: approval.Pick, Accept: []approval.Accepted{{Commit: req.Commits[0].ID, Files: []approval.AcceptedFile{
		{Path: "run.sh", Hunks: []approval.AcceptedHunk{{Index: 0, ID: approval.HunkID(fd.Hunks[0])}}}}}}}
	execFlag := hasCode(approval.PickFlags(req, nil, dec.Accept), approval.FlagExecutable)
	_, err = e.gate.Resolve(dec)
	must(t, err)
	<-done
	clone := t.TempDir()
	git(t, clone, "clone", "-q", path, ".")
	git(t, clone, "reset", "-q", "main~1")
	pf := filepath.Join(t.TempDir(), "pick.patch")
	must(t, os.WriteFile(pf, []byte(fd.Header+fd.Hunks[0]), 0o644))
	git(t, clone, "apply", "--cached", pf)
	want := git(t, clone, "ls-files", "-s", "run.sh")
	got := git(t, path, "ls-tree", "-r", "main")
	if f := strings.Fields(want); len(f) < 2 || !strings.Contains(got, "100644 blob "+f[1]+"\trun.sh") {
		t.Errorf("landed\n%s\nwant run.sh with git apply --cached's content, its old mode: %s", got, want)
	}
	if strings.Contains(got, "command.go") {
		t.Errorf("the old name is still there:\n%s", got)
	}
	landsExec := strings.Contains(got, "100755 blob")
	if execFlag != landsExec {
		t.Errorf("the pick's flags say executable=%v, the landed file is executable=%v", execFlag, landsExec)
	}
}
