//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A branch of the target that is a symbolic ref to another (made by
// anyone who can write the repository: git symbolic-ref refs/heads/agent
// refs/heads/main) is not pushed through: the push was approved for the
// branch named, and git would move the one it points to, a protected one
// perhaps, that no reviewer was asked about. The push is refused, saying
// which branch the ref points to, and nothing moves.
func TestPushThroughASymbolicBranchIsRefused(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	bare := filepath.Join(root, "target.git")
	mustGit(t, env, root, "init", "-q", "--bare", "-b", "main", bare)
	src := filepath.Join(root, "src")
	mustGit(t, env, root, "init", "-q", "-b", "main", src)
	mustGit(t, env, src, "commit", "-q", "--allow-empty", "-m", "reviewed")
	mustGit(t, env, src, "push", "-q", bare, "main")
	mustGit(t, env, bare, "symbolic-ref", "refs/heads/agent", "refs/heads/main")
	main := mustGit(t, env, bare, "rev-parse", "refs/heads/main")
	wf := filepath.Join(root, "w.md")
	if err := os.WriteFile(wf, []byte(fmt.Sprintf("---\nname: symref\ngit:\n  default_target: {type: local-bare, path: %q, branch: agent}\n---\n", bare)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, _ := serveMCP(t, ctx, env, root, wf, "--auto-approve", "default", "--ephemeral")
	w := &worker{t: t, ctx: ctx, cs: cs}
	w.call("write_file", map[string]any{"path": "x.txt", "content": "unreviewed for main\n"})
	w.call("git_stage", map[string]any{"message": "to agent"})
	out, isErr := w.try("git_push", map[string]any{})
	t.Logf("git_push: %s", out)
	if !isErr || !strings.Contains(out, "refs/heads/main") {
		t.Errorf("git_push through a symbolic branch answered (error %v): %s", isErr, out)
	}
	if now := mustGit(t, env, bare, "rev-parse", "refs/heads/main"); now != main {
		t.Errorf("main moved from %s to %s: %s", strings.TrimSpace(main), strings.TrimSpace(now), mustGit(t, env, bare, "log", "--oneline", "-2", "main"))
	}
}
