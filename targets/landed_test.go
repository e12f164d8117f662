//go:build unix

package targets_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/targets"
)

// A push whose branch moved but whose files could not be written is a
// landed push with a stale working tree, not a failure: the error says so
// and how to finish, later pushes are held back (not wedged) until the
// cause is gone, and then recovery finishes the update.
func TestLandedPushWithStaleWorktree(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, dir, map[string]string{"a.txt": "a\n"})
	run(t, dir, nil, nil, "add", "-A")
	run(t, dir, nil, nil, "commit", "-qm", "base")
	// git status does not list a FIFO, so nothing reports it in the way;
	// writing under it fails.
	if err := syscall.Mkfifo(filepath.Join(dir, "out"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	tgt, err := targets.OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, tgt)
	head := sb.pull(t, tgt, "refs/heads/main")
	sb.ws.WriteFile("out/report.md", []byte("report\n"), 0o644)
	id, err := sb.push(t, tgt, "refs/heads/main", head)
	var stale *targets.WorktreeError
	if !errors.As(err, &stale) || !errors.Is(err, targets.ErrWorktreeNotUpdated) {
		t.Fatalf("push: %v, want a WorktreeError", err)
	}
	if !strings.Contains(err.Error(), "read-tree -m -u") {
		t.Errorf("the error does not say how to finish: %v", err)
	}
	if got := strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "main")); got != id.String() {
		t.Fatalf("main is at %s, not the pushed %s", got, id)
	}
	// Until the FIFO goes, a later push says what is wrong.
	sb.ws.WriteFile("b.txt", []byte("b\n"), 0o644)
	if _, err := sb.push(t, tgt, "refs/heads/main", id); !errors.Is(err, targets.ErrWorktreeNotUpdated) {
		t.Fatalf("a push over the stale working tree: %v", err)
	}
	os.Remove(filepath.Join(dir, "out"))
	if err := tgt.Recover(context.Background()); err != nil {
		t.Fatalf("recovery once the cause is gone: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "out", "report.md")); string(got) != "report\n" {
		t.Errorf("recovery did not finish the update: %q", got)
	}
	if st := run(t, dir, nil, nil, "status", "--porcelain"); st != "" {
		t.Errorf("git status after recovery:\n%s", st)
	}
}
