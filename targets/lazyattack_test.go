package targets_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/targets"
)

// commitFiles writes files into the working tree of dir and commits them.
func commitFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	writeFiles(t, dir, files)
	run(t, dir, nil, nil, "add", "-A")
	run(t, dir, nil, nil, "commit", "-qm", "c")
}

// The repository a base came from is the user's: git gc runs there
// (by hand, or on its own after a commit) while the session lives. Loose
// objects the pull saw are packed and removed, a pack the source had
// indexed is replaced by another: every lazy file still reads, because
// the objects are all still there.
func TestLazyBaseSurvivesGCOfItsRepository(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
	files := map[string]string{}
	for i := 0; i < 6; i++ {
		files[fmt.Sprintf("f%d.txt", i)] = strings.Repeat(fmt.Sprintf("file %d\n", i), 20)
	}
	commitFiles(t, dir, files)
	tgt, err := targets.OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sb := newSandbox(t, tgt)
	sb.pull(t, tgt, "refs/heads/main")
	read := func(p string) {
		t.Helper()
		got, err := sb.ws.ReadFile(p)
		if err != nil || string(got) != files[p] {
			t.Fatalf("read %s: %q %v", p, got, err)
		}
	}
	read("f0.txt") // the source's storages have looked at the objects
	// Loose objects packed, then removed.
	run(t, dir, nil, nil, "gc", "-q", "--prune=now")
	read("f1.txt")
	read("f2.txt")
	// The pack replaced by another one.
	commitFiles(t, dir, map[string]string{"other.txt": "more\n"})
	run(t, dir, nil, nil, "repack", "-adq")
	run(t, dir, nil, nil, "prune", "--expire=now")
	read("f3.txt")
	read("f4.txt")
	read("f5.txt")
}
