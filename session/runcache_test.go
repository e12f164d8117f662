package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/runcache"
)

// workerCache opens the cache of the worker key under root, as airlock
// serve does under its state directory (a private one: a root server's
// jail cannot walk to it by path).
func workerCache(t *testing.T, root, key string, max int64) *runcache.Cache {
	t.Helper()
	c, err := runcache.Open(root, runcache.Meta{Worker: "tester", WorkerKey: key}, max)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func mustRun(t *testing.T, e *env, command string) session.RunResult {
	t.Helper()
	res, err := e.s.Run(context.Background(), session.RunArgs{Command: command}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// What a run writes under ~/.cache stays with the worker: a new session of
// the same worker (a restarted server) sees it, another worker's does not
// and cannot reach it, and none of it is in the workspace.
func TestRunCacheOutlivesTheSession(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	root := filepath.Join(t.TempDir(), "state", "cache")
	a := workerCache(t, root, "file:/workers/a.md", 1<<30)

	e := runEnv(t, r, session.RunOptions{Cache: a}, config{})
	res := mustRun(t, e, "mkdir -p ~/.cache/probe && echo warm > ~/.cache/probe/x && echo $GOCACHE $GOMODCACHE $PIP_CACHE_DIR $XDG_CACHE_HOME")
	if res.Exit != 0 || res.Stdout != "/home/sandbox/.cache/go-build /home/sandbox/.cache/go-mod /home/sandbox/.cache/pip /home/sandbox/.cache\n" {
		t.Fatalf("exit %d stdout %q stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	if len(res.Created)+len(res.Modified) != 0 {
		t.Errorf("the cache came into the workspace: created %v modified %v", res.Created, res.Modified)
	}
	if b, err := os.ReadFile(filepath.Join(a.Dir(), "probe", "x")); err != nil || string(b) != "warm\n" {
		t.Errorf("the worker's cache on disk holds %q, %v", b, err)
	}
	e.s.Close()

	again := runEnv(t, r, session.RunOptions{Cache: workerCache(t, root, "file:/workers/a.md", 1<<30)}, config{})
	if res := mustRun(t, again, "cat ~/.cache/probe/x"); res.Exit != 0 || res.Stdout != "warm\n" {
		t.Errorf("a new session of the worker: exit %d stdout %q stderr %q", res.Exit, res.Stdout, res.Stderr)
	}

	b := workerCache(t, root, "file:/workers/b.md", 1<<30)
	other := runEnv(t, r, session.RunOptions{Cache: b}, config{})
	res = mustRun(t, other, "cat ~/.cache/probe/x; ls "+root+" "+a.Dir()+"; echo mine > ~/.cache/b.txt")
	if res.Exit != 0 || strings.Contains(res.Stdout, "warm") || res.Stdout != "" {
		t.Errorf("another worker's run: exit %d stdout %q stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(a.Dir(), "b.txt")); err == nil {
		t.Error("another worker wrote into a's cache")
	}

	// Without a worker cache, a session's runs keep theirs for the session.
	own := runEnv(t, r, session.RunOptions{}, config{})
	if res := mustRun(t, own, "cat ~/.cache/probe/x 2>/dev/null; echo s > ~/.cache/s; cat ~/.cache/s"); res.Stdout != "s\n" {
		t.Errorf("a session without a worker cache: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if res := mustRun(t, own, "cat ~/.cache/s"); res.Stdout != "s\n" {
		t.Errorf("a session's own cache did not last to its next run: %q %q", res.Stdout, res.Stderr)
	}
}

// Runs that fill the cache past its bound are followed by an eviction,
// in the background, that brings it back under.
func TestRunCacheIsBounded(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	root := filepath.Join(t.TempDir(), "cache")
	c := workerCache(t, root, "file:/workers/a.md", 4<<20)
	e := runEnv(t, r, session.RunOptions{Cache: c}, config{})
	for _, cmd := range []string{
		"mkdir -p ~/.cache/old && head -c 3000000 /dev/zero > ~/.cache/old/blob && touch -d '3 days ago' ~/.cache/old/blob",
		"mkdir -p ~/.cache/new && head -c 3000000 /dev/zero > ~/.cache/new/blob",
	} {
		if res := mustRun(t, e, cmd); res.Exit != 0 || res.CacheDropped != "" {
			t.Fatalf("exit %d stderr %q cache %q", res.Exit, res.Stderr, res.CacheDropped)
		}
	}
	// Each run's end started a trim (the second's at once: the cache is
	// over its bound); a trim that met the other run tried again after it.
	c.Wait()
	l, err := runcache.Lookup(root, c.Meta().ID)
	if err != nil {
		t.Fatal(err)
	}
	if l.Usage.Bytes > c.Max() {
		t.Fatalf("the cache holds %d bytes, over its bound of %d, once its trim ended", l.Usage.Bytes, c.Max())
	}
	if len(l.Usage.Entries) != 1 || l.Usage.Entries[0].Name != "new" {
		t.Errorf("kept %+v, want the recently used entry only", l.Usage.Entries)
	}
}

// A file (or directory) a new session of the worker mirrors with the
// content (or entries) it had in the last one keeps that one's time (go
// test's cached results of tests that read them stay valid); a changed
// file gets a later time (make rebuilds from it).
func TestRunFileTimesSteadyAcrossSessions(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "testdata/in.txt": "input\n"})
	root := filepath.Join(t.TempDir(), "cache")
	times := "stat -c '%n %.9Y' README.md testdata/in.txt testdata"
	e := runEnv(t, r, session.RunOptions{Cache: workerCache(t, root, "file:/w.md", 1<<30)}, config{})
	first := mustRun(t, e, times).Stdout
	e.s.Close()
	// Not a wait for anything: the file system's clock is coarse (a
	// tick), and a file the next session wrote anew must be able to get
	// a later time than the first session's for this test to fail.
	time.Sleep(20 * time.Millisecond)

	e = runEnv(t, r, session.RunOptions{Cache: workerCache(t, root, "file:/w.md", 1<<30)}, config{})
	if again := mustRun(t, e, times).Stdout; again != first || first == "" {
		t.Errorf("the times of unchanged files moved across sessions:\n%s\nthen\n%s", first, again)
	}
	e.write(t, "README.md", "# changed\n")
	changed := strings.Fields(mustRun(t, e, times).Stdout)
	before := strings.Fields(first)
	if len(changed) != 6 || changed[1] <= before[1] || changed[3] != before[3] || changed[5] != before[5] {
		t.Errorf("after a change: %v, before %v: want README.md later, testdata and testdata/in.txt the same", changed, before)
	}
	e.s.Close()

	// The changed file keeps its new time in the next session, too.
	e = runEnv(t, r, session.RunOptions{Cache: workerCache(t, root, "file:/w.md", 1<<30)}, config{})
	e.write(t, "README.md", "# changed\n")
	if got := strings.Fields(mustRun(t, e, times).Stdout); len(got) != 6 || got[1] != changed[1] || got[3] != before[3] || got[5] != before[5] {
		t.Errorf("in the next session: %v, want %v", got, changed)
	}
}
