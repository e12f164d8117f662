//go:build unix

package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// The roll-forward's writer never writes through a symlink or into .git,
// keeps temporary files in its private directory under short names, and
// leaves files that merely look like temporary ones alone.
func TestWorktreeWriter(t *testing.T) {
	wt, outside := t.TempDir(), t.TempDir()
	os.Symlink(outside, filepath.Join(wt, "linked"))
	os.Symlink("../..", filepath.Join(wt, "up"))
	os.WriteFile(filepath.Join(wt, "notes.md.airlock-tmp"), []byte("the user's own\n"), 0o644)
	os.Mkdir(filepath.Join(wt, ".git"), 0o755)
	tmp := filepath.Join(wt, ".git", "airlock", "tmp")
	w, err := Open(wt, tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"linked/evil.txt", "up/evil.txt", ".git/config", ".GIT/hooks/post-checkout", "a/../../evil.txt", "/abs.txt"} {
		if err := w.Write(p, filemode.Regular, []byte("x")); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("write %q: %v, want a refusal", p, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("a write went through the symlink: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(wt, ".git", "config")); err == nil {
		t.Error(".git/config was written")
	}
	long := strings.Repeat("n", 253)
	for p, mode := range map[string]filemode.FileMode{
		"notes.md": filemode.Regular, "dir/" + long: filemode.Executable, "dir/link": filemode.Symlink,
	} {
		if err := w.Write(p, mode, []byte("content")); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(wt, "notes.md.airlock-tmp")); string(got) != "the user's own\n" {
		t.Errorf("the user's notes.md.airlock-tmp was touched: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(wt, "dir", long)); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("the 253-byte name: %v %v", fi, err)
	}
	if target, _ := os.Readlink(filepath.Join(wt, "dir", "link")); target != "content" {
		t.Errorf("the symlink points to %q", target)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("temporary files were left behind: %v", ents)
	}
	// A removal through a symlinked directory is refused too, and one
	// that empties a directory takes it away.
	os.WriteFile(filepath.Join(outside, "victim"), []byte("v"), 0o644)
	if err := w.Remove("linked/victim"); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("remove through a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "victim")); err != nil {
		t.Error("a file outside the working tree was removed")
	}
	for _, p := range []string{"dir/" + long, "dir/link"} {
		if err := w.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(wt, "dir")); !os.IsNotExist(err) {
		t.Error("the emptied directory is still there")
	}
}
