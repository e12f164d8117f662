//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// The worker's cache over the real binary: what a run writes under
// ~/.cache is there after airlock serve restarts, airlock cache lists and
// shows it, and clear empties it for the next server's runs.
func TestCacheSurvivesARestart(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	_, wf := runnerWorker(t, env, root)
	serve := func() (*worker, *lockedBuffer) {
		cs, stderr := serveMCP(t, ctx, env, root, wf, "--run-cache-size", "64MiB")
		return &worker{t: t, ctx: ctx, cs: cs}, stderr
	}

	w, stderr := serve()
	out := w.call("run", map[string]any{"command": "mkdir -p ~/.cache/probe && echo warm > ~/.cache/probe/x && echo wrote"})
	mustContain(t, "run", out, "exit 0", "wrote")
	if strings.Contains(out, "created:") {
		t.Errorf("the cache came into the workspace:\n%s", out)
	}
	mustContain(t, "serve's stderr", stderr.String(), "their caches (~/.cache) are kept for this worker in", "up to 64 MiB")
	w.cs.Close()

	w, _ = serve()
	mustContain(t, "a run after the restart", w.call("run", map[string]any{"command": "cat ~/.cache/probe/x"}), "exit 0", "warm")
	w.cs.Close()

	stdout, errOut, code := runAirlock(t, env, root, "cache", "list")
	if code != 0 {
		t.Fatalf("cache list: exit %d %s", code, errOut)
	}
	mustContain(t, "cache list", stdout, "ID", "WORKER", "runner", "idle", wf)
	stdout, errOut, code = runAirlock(t, env, root, "cache", "show", "--worker", wf)
	if code != 0 {
		t.Fatalf("cache show: exit %d %s", code, errOut)
	}
	mustContain(t, "cache show", stdout, "worker    runner", "probe", "1 files", "airlock cache clear")
	stdout, errOut, code = runAirlock(t, env, root, "cache", "clear", "--worker", wf)
	if code != 0 {
		t.Fatalf("cache clear: exit %d %s", code, errOut)
	}
	mustContain(t, "cache clear", stdout, "cleared the cache of worker file:", "freed")

	w, _ = serve()
	out = w.call("run", map[string]any{"command": "cat ~/.cache/probe/x || echo cold"})
	mustContain(t, "a run after clear", out, "cold")

	// Another worker (the default one of another directory) has none yet.
	other := t.TempDir()
	_, errOut, code = runAirlock(t, env, other, "cache", "show")
	if code != 1 || !strings.Contains(errOut, "has no cache yet") {
		t.Errorf("cache show of a worker without one: exit %d %s", code, errOut)
	}
	_, errOut, code = runAirlock(t, env, root, "cache", "show", "nope", "--worker", wf)
	if code != 2 || !strings.Contains(errOut, "not both") {
		t.Errorf("cache show with an id and --worker: exit %d %s", code, errOut)
	}
}

// --run-ro works when airlock runs as root and the path lies under a
// directory only root may enter (as ~/go/pkg/mod under /root); a path the
// commands' user could not read is refused at start, saying what to do.
func TestRunReadOnlyUnderAPrivateDirectory(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	private := filepath.Join(t.TempDir(), "home")
	mod := filepath.Join(private, "go", "pkg", "mod")
	os.MkdirAll(mod, 0o755)
	os.Chmod(private, 0o700)
	os.WriteFile(filepath.Join(mod, "dep.txt"), []byte("a dependency\n"), 0o644)

	w, stderr, _ := startWorker(t, "--run-ro", mod)
	mustContain(t, "serve's stderr", stderr.Await("commands run in a sandbox"), "commands run in a sandbox")
	mustContain(t, "run", w.call("run", map[string]any{"command": "cat " + filepath.Join(mod, "dep.txt")}), "exit 0", "a dependency")

	if os.Getuid() != 0 {
		return // the rest is a root server's
	}
	closed := filepath.Join(t.TempDir(), "closed")
	os.Mkdir(closed, 0o700)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	_, errOut, code := runAirlock(t, env, root, "serve", "--run-ro", closed)
	if code != 2 {
		t.Fatalf("serve --run-ro of a 0700 directory: exit %d %s", code, errOut)
	}
	mustContain(t, "serve's refusal", errOut, "commands act as nobody", "chmod o+rX "+closed)
}
