package review_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/ptytest"
)

// yesRequest is a push of three files, one of them the only high risk
// (a script with a bidi override), one a new binary (low), to a branch
// that is nothing special to its target.
func yesRequest() *approval.Request {
	r := &approval.Request{
		ID: "req-yes", Worker: "fixer", Target: "local:/srv/app", Describe: "local:/srv/app",
		Ref: "refs/heads/main", RefRole: approval.BranchCheckedOut, Old: approvaltest.Hash("old"), New: approvaltest.Hash("new"), Tree: approvaltest.Hash("tree"),
		Commits: []approval.CommitInfo{{ID: approvaltest.Hash("new"), Message: "Tidy the scripts"}},
		Files: []approval.FileChange{
			{Path: "README.md", Op: change.Update, Size: 40, OldMode: filemode.Regular, NewMode: filemode.Regular, Added: 1, Deleted: 1},
			{Path: "scripts/check.sh", Op: change.Create, Size: 30, NewMode: filemode.Regular, Added: 1},
			{Path: "docs/logo.png", Op: change.Create, Size: 67, NewMode: filemode.Regular, Binary: true},
		},
		Added: 2, Deleted: 1, Pickable: true,
		Diff: "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# App\n+# The app\n",
	}
	nu := map[string]string{"README.md": "# The app\n", "scripts/check.sh": "echo ok # \u202e\n", "docs/logo.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"}
	r.Flags = approval.Assess(r, approval.Rules{}, func(p string, newSide bool) ([]byte, bool) {
		s, ok := nu[p]
		return []byte(s), ok && newSide
	})
	return r
}

var doubledKey = regexp.MustCompile(`\n([ap])[ap]+\n`)

// In a real terminal, approving a push whose only high risk is one file
// asks for yes naming that flag; picking the files without it asks no
// yes. The screens, through a terminal emulator, are golden.
func TestYesNamesItsFlagInPseudoTerminal(t *testing.T) {
	for _, c := range []struct {
		name, golden string
		keys         [][2]string // wait for, then press
		want         approval.Verdict
	}{
		{"approve", "yes-approve.golden", [][2]string{{"[?]help", "a"}, {"Type yes to approve anyway", "yes\r"}}, approval.Approve},
		{"pick without it", "yes-pick.golden", [][2]string{{"[?]help", "p"}, {"Files to push", "1,3\r"}}, approval.Pick},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "request.json"), filepath.Join(dir, "decision.json")
			data, err := json.Marshal(yesRequest())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(in, data, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestPickChild$")
			cmd.Env = append(os.Environ(), "AIRLOCK_PICK_CHILD="+in, "AIRLOCK_PICK_OUT="+out, "PAGER=cat", "TERM=xterm")
			p := ptytest.Start(t, cmd)
			at := 0
			for _, k := range c.keys {
				at = p.Screen.WaitFor(t, at, k[0], 10*time.Second)
				p.Press(t, k[1])
			}
			if code := p.Wait(t, 10*time.Second); code != 0 {
				t.Fatalf("the prompt exited %d:\n%s", code, p.Screen.String())
			}
			// The child's test framework prints PASS as it exits: the
			// screen is the prompt's, up to there.
			p.Screen.WaitFor(t, at, "\nPASS\n", 10*time.Second)
			shown, _, _ := strings.Cut(p.Screen.String(), "\nPASS\n")
			// A key pressed before the prompt set the terminal raw is
			// echoed by the terminal too: one echo is the prompt's.
			shown = doubledKey.ReplaceAllString(shown, "\n$1\n")
			checkGolden(t, c.golden, screen(t, shown))
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var d approval.Decision
			if err := json.Unmarshal(got, &d); err != nil {
				t.Fatal(err)
			}
			if d.Verdict != c.want {
				t.Errorf("decision %+v, want %s", d, c.want)
			}
		})
	}
}
