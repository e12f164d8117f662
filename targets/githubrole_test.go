package targets_test

import (
	"strings"

	"context"
	"github.com/airlock-dev/airlock/targets/githubemu"
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

// A GitHub target whose default branch could not be read (GitHub
// answered an error) cannot say a push to main is not to its default
// branch: the push is flagged for it, as unreadable protection is, not
// let through as "another branch".
func TestGitHubDefaultBranchUnreadIsFlagged(t *testing.T) {
	tgt, emu, insp, _ := emulated(t, targets.GitHubOptions{})
	insp.Commit(t, "main", map[string]targettest.File{"README.md": {Data: "# r\n"}})
	emu.Inject(githubemu.Fault{Method: "GET", Path: "", Status: 403, Message: "Resource not accessible by integration", Times: 1})
	f, err := targets.ReadFacts(context.Background(), tgt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if f.Role == "" {
		t.Fatalf("facts %+v: the default branch was not read, and a push to main raises no branch flag", f)
	}
	r := &approval.Request{Ref: f.Ref, RefRole: f.Role, Describe: "octo-org/reports"}
	flags := approval.Assess(r, approval.Rules{}, nil)
	if len(flags) != 1 || flags[0].Code != approval.FlagProtectedRef || !strings.Contains(flags[0].Message, "could not be read") {
		t.Errorf("flags %+v: want one saying the default branch could not be read", flags)
	}
	if emu.Calls("GET", "") == 0 {
		t.Error("the emulator was never asked")
	}
}
