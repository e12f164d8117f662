package targets_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/targets"
)

// ExcludeFile finds info/exclude where git itself reads it: in a working
// tree, a bare repository, a linked worktree (the main repository's) and a
// working tree whose .git is a file naming its git directory.
func TestExcludeFile(t *testing.T) {
	main := t.TempDir()
	run(t, main, nil, nil, "init", "-q", "-b", "main", ".")
	os.WriteFile(filepath.Join(main, "a"), []byte("a\n"), 0o644)
	run(t, main, nil, nil, "add", "-A")
	run(t, main, nil, nil, "commit", "-qm", "a")
	linked := filepath.Join(t.TempDir(), "linked")
	run(t, main, nil, nil, "worktree", "add", "-q", "-b", "other", linked)
	bare := filepath.Join(t.TempDir(), "bare.git")
	run(t, main, nil, nil, "clone", "-q", "--bare", main, bare)
	separate := t.TempDir()
	run(t, separate, nil, nil, "init", "-q", "--separate-git-dir", filepath.Join(t.TempDir(), "gitdir"), ".")
	sub := filepath.Join(main, "sub")
	os.Mkdir(sub, 0o755)
	for _, dir := range []string{main, linked, bare, separate, sub} {
		want := strings.TrimSpace(run(t, dir, nil, nil, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude"))
		got, err := targets.ExcludeFile(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %s, git reads %s", dir, got, want)
		}
	}
	if _, err := targets.ExcludeFile(context.Background(), t.TempDir()); err == nil {
		t.Error("a directory that is no repository has an exclude file")
	}
}
