package targets_test

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/targettest"
)

// A GitHub target says what a branch is to it: its default branch and
// the branches its protection covers are high risk to push to; another
// branch, or one not made yet, is not.
func TestGitHubBranchRoles(t *testing.T) {
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
	insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
	insp.Commit(t, "release", map[string]targettest.File{"README.md": {Data: "# r\n"}})
	insp.Commit(t, "scratch", map[string]targettest.File{"README.md": {Data: "# r\n"}})
	emu.Protect("release")
	for branch, want := range map[string]string{
		"main": approval.BranchDefault, "release": approval.BranchProtected, "scratch": "", "new-branch": "",
	} {
		f, err := targets.ReadFacts(context.Background(), tgt, branch)
		if err != nil || f.Role != want {
			t.Errorf("%s: role %q, %v; want %q", branch, f.Role, err, want)
		}
	}
}
