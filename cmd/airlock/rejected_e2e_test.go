//go:build unix

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestRejectThenFollowTheAdvice is issue 32's third break, end to end
// through a real `airlock serve` and a real `airlock review` in a
// terminal: the reviewer rejects a commit holding a token; the worker
// follows the rejection's advice literally (fix the file, git_stage amend:
// true, git_push again; or git_discard {}, stage the fix, push); the
// re-review says the commit replaces the rejected one (or is new); after
// the approval, the target's history holds no rejected content: not in
// `git log -p`, and the rejected blob is not among `git rev-list
// --objects`.
func TestRejectThenFollowTheAdvice(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	for _, way := range []string{"amend", "discard"} {
		t.Run(way, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			root := t.TempDir()
			env := isolatedEnv(t, root)
			repo := filepath.Join(root, "project")
			initRepo(t, env, repo, map[string]string{"README.md": "# p\n"})
			mustGit(t, env, repo, "branch", "agent")
			w := startWorkerOn(t, ctx, bin, env, root, "rejected", repo)
			const token = "token = REJECTED-3f9a61c2\n"
			w.call("write_file", map[string]any{"path": "config.txt", "content": token})
			w.call("git_stage", map[string]any{"message": "Add the config"})
			push := w.pushAsync(map[string]any{})
			waitPending(t, w, "Add the config")

			rv := startReview(t, bin, env, root)
			scr := rv.Screen
			const within = 20 * time.Second
			at := scr.WaitFor(t, 0, "[?]help", within)
			rv.Press(t, "r")
			at = scr.WaitFor(t, at, "Reason (optional", within)
			rv.Press(t, "no tokens in the config\r")
			at = scr.WaitFor(t, at, "Rejected; the worker is told", within)
			res := awaitPush(t, push, scr)
			if !res.isErr {
				t.Fatalf("git_push after a rejection did not fail: %s", res.text)
			}
			mustContain(t, "the rejection's advice", res.text, "no tokens in the config", "The rejected commit stays staged", "git_discard", "git_stage amend: true")

			status := w.call("git_status", map[string]any{})
			mustContain(t, "git_status after the rejection", status, `"Add the config" (1 file) rejected by the reviewer`)
			// The advice, followed to the letter.
			w.call("write_file", map[string]any{"path": "config.txt", "content": "token = from the environment\n"})
			switch way {
			case "amend":
				out := w.call("git_stage", map[string]any{"amend": true})
				mustContain(t, "git_stage amend", out, "replaced", "Add the config")
			case "discard":
				out := w.call("git_discard", map[string]any{})
				mustContain(t, "git_discard {}", out, "dropped the staged commits the reviewer rejected", "Add the config")
				w.call("git_stage", map[string]any{"message": "Add the config, the token from the environment"})
			}
			push = w.pushAsync(map[string]any{})
			waitPending(t, w, "Add the config")
			at = scr.WaitFor(t, at, "Asked again:", within)
			at = scr.WaitFor(t, at, "[?]help", within)
			shown := scr.String()[strings.LastIndex(scr.String(), "Asked again:"):]
			switch way {
			case "amend":
				mustContain(t, "the re-review", shown, "Its commits: 1 replacing a rejected one.", "which you rejected")
			case "discard":
				mustContain(t, "the re-review", shown, "Its commits: 1 new.")
			}
			if strings.Contains(shown, "you rejected, here again") {
				t.Errorf("the re-review says a rejected commit is here again:\n%s", shown)
			}
			rv.Press(t, "a")
			scr.WaitFor(t, at, "the push goes ahead", within)
			if res := awaitPush(t, push, scr); res.isErr {
				t.Fatalf("the second git_push: %s", res.text)
			}
			history := mustGit(t, env, repo, "log", "-p", "--all")
			objects := mustGit(t, env, repo, "rev-list", "--objects", "--all")
			blob := plumbing.ComputeHash(plumbing.BlobObject, []byte(token)).String()
			if strings.Contains(history, "REJECTED-3f9a61c2") || strings.Contains(objects, blob) {
				t.Errorf("the rejected content is in the target's history (blob %s):\n%s", blob, history)
			}
			if got := mustGit(t, env, repo, "show", "agent:config.txt"); got != "token = from the environment\n" {
				t.Errorf("the target holds %q", got)
			}
			if n := strings.TrimSpace(mustGit(t, env, repo, "rev-list", "--count", "main..agent")); n != fmt.Sprint(1) {
				t.Errorf("%s commits landed; want 1", n)
			}
			rv.Press(t, "\x03")
			if code := rv.Wait(t, within); code != 0 {
				t.Errorf("airlock review exited %d after Ctrl-C", code)
			}
		})
	}
}
