package session_test

import (
	"context"
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
