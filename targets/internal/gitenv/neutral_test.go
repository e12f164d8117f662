package gitenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestNeutralIgnoresReplaceRefs: the shared Neutral directory (in the
// user's cache, which any process of the user can write) is given a
// replace ref, as refs/replace/BLOB. A read through a Neutral still
// returns the object as it is: airlock shows the reviewer, and pushes,
// the objects themselves.
func TestNeutralIgnoresReplaceRefs(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	reset := func() { shared.once, shared.dir, shared.err = sync.Once{}, "", nil }
	reset()
	t.Cleanup(reset)
	repo := t.TempDir()
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(Clean(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("", "init", "-q", "--bare")
	real := git("real\n", "hash-object", "-w", "--stdin")
	fake := git("fake\n", "hash-object", "-w", "--stdin")
	n, err := NewNeutral(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := os.MkdirAll(filepath.Join(n.dir, "refs", "replace"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "refs", "replace", real), []byte(fake+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := n.Command(context.Background(), "cat-file", "blob", real)
	out, err := cmd.Output()
	if err != nil || string(out) != "real\n" {
		t.Errorf("reading %s through a Neutral whose refs hold a replacement: %q %v; want %q", real, out, err, "real\n")
	}
}
