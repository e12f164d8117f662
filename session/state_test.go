package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

// Issue 11: five stage+discard cycles of a 1 MiB file held 5 MiB for good,
// and the quota error's advice (discard staged commits) freed nothing.
// Objects are collected by reachability: what a discard drops is let go.
func TestDiscardFreesObjects(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	base := e.s.Held().StoreBytes
	for i := 0; i < 5; i++ {
		e.write(t, "big.bin", strings.Repeat(fmt.Sprint(i), 1<<20))
		c, err := e.s.Stage(nil, "big")
		must(t, err)
		if _, err := e.s.Discard(c.ID.String(), false); err != nil {
			t.Fatal(err)
		}
	}
	// What stays: the base, and nothing of the discarded commits.
	if held := e.s.Held().StoreBytes; held > base+4096 {
		t.Errorf("after five stage+discard cycles the store holds %d bytes, %d more than the base", held, held-base)
	}
}

// The quota error names what keeps memory and how to release it, and
// following its advice works: a file staged and then deleted is kept by
// its staged commit, and discarding that releases it.
func TestQuotaAdviceFreesRoom(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{limits: memfs.Limits{MaxTotalBytes: 3 << 20, MaxFileBytes: 2 << 20}})
	big := func(c string) []byte { return bytes.Repeat([]byte(c), 1<<20+1<<19) }
	must(t, e.s.Workspace().WriteFile("a.bin", big("a"), 0o644))
	_, err := e.s.Stage(nil, "a")
	must(t, err)
	must(t, e.s.Workspace().Remove("a.bin"))
	err = e.s.Workspace().WriteFile("b.bin", big("b"), 0o644)
	if !errors.Is(err, memfs.ErrQuotaExceeded) || !strings.Contains(err.Error(), "1.5 MiB kept only by the base and the staged commits: git_discard") {
		t.Fatalf("writing over the quota: %v; want it to name the staged commit as what keeps the memory", err)
	}
	if _, err := e.s.Discard("", true); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Workspace().WriteFile("b.bin", big("b"), 0o644); err != nil {
		t.Fatalf("after following the advice, the write still fails: %v", err)
	}
	if _, err := e.s.Stage(nil, "b only"); err != nil {
		t.Errorf("staging after the discard: %v", err)
	}
}

// Issue 11: checkpoint, write 2 MiB, stage, rollback, ten times: 20 MiB
// held under a 4 MiB quota. The quota holds, and what it says to do works.
func TestRollbackTallyNeverUndercounts(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{limits: memfs.Limits{MaxTotalBytes: 4 << 20, MaxFileBytes: 4 << 20}})
	refused := false
	for i := 0; i < 10; i++ {
		_, err := e.s.Checkpoint("")
		must(t, err)
		err = e.s.Workspace().WriteFile(fmt.Sprintf("f%d.bin", i), bytes.Repeat([]byte{byte('a' + i)}, 2<<20), 0o644)
		if errors.Is(err, memfs.ErrQuotaExceeded) {
			refused = true
			break
		}
		must(t, err)
		if _, err := e.s.Stage(nil, "two MiB"); err != nil {
			if errors.Is(err, memfs.ErrQuotaExceeded) {
				refused = true
				break
			}
			t.Fatal(err)
		}
		_, err = e.s.Rollback("")
		must(t, err)
		if _, held := e.s.Workspace().ExactUsage(); held.Bytes > 4<<20 {
			t.Fatalf("cycle %d: %d bytes held under a 4 MiB quota", i, held.Bytes)
		}
	}
	if !refused {
		t.Fatal("ten 2 MiB commits never met the 4 MiB quota")
	}
}

// Issue 11: a rollback to a checkpoint taken before a git_pull turned the
// upstream changes into the worker's own reverts, which the next git_stage
// committed. Now the checkpoint's own changes are replayed onto the new
// base, and what both changed is listed.
func TestRollbackAfterPullKeepsUpstream(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "up.txt": "1\n", "both.txt": "base\n"})
	e := newEnv(t, r, config{})
	e.write(t, "mine.txt", "checkpointed\n")
	e.write(t, "both.txt", "mine\n")
	_, err := e.s.Checkpoint("before-pull")
	must(t, err)
	e.write(t, "mine.txt", "after the checkpoint\n")
	must(t, e.s.Workspace().WriteFile("both.txt", []byte("base\n"), 0o644)) // back to base, so the pull can land
	commitTo(t, r, "up.txt", "2\n")
	commitTo(t, r, "both.txt", "theirs\n")
	if _, err := e.s.Pull(context.Background(), "", nil, ""); err != nil {
		t.Fatal(err)
	}
	res, err := e.s.Rollback("before-pull")
	must(t, err)
	if !res.Replayed || !slices.Equal(res.Conflicts, []string{"both.txt"}) {
		t.Errorf("rollback %+v: want a replay with both.txt in conflict", res)
	}
	read := func(p string) string {
		b, err := e.s.Workspace().ReadFile(p)
		must(t, err)
		return string(b)
	}
	if got := read("up.txt"); got != "2\n" {
		t.Errorf("up.txt = %q: the rollback reverted upstream work", got)
	}
	if got := read("mine.txt"); got != "checkpointed\n" {
		t.Errorf("mine.txt = %q, want the checkpoint's", got)
	}
	if got := read("both.txt"); got != "theirs\n" {
		t.Errorf("both.txt = %q, want upstream's (listed as a conflict)", got)
	}
	c, err := e.s.Stage(nil, "after the rollback")
	must(t, err)
	var paths []string
	for _, f := range c.Files {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, []string{"mine.txt"}) {
		t.Errorf("the next stage commits %v; want only the worker's own mine.txt", paths)
	}
}

// A rollback while the base stands still is the checkpoint exactly.
func TestRollbackWithoutMovedBaseIsExact(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "1\n")
	_, err := e.s.Checkpoint("cp")
	must(t, err)
	e.write(t, "a.txt", "2\n")
	res, err := e.s.Rollback("cp")
	must(t, err)
	if res.Replayed {
		t.Error("replayed although the base did not move")
	}
	if b, _ := e.s.Workspace().ReadFile("a.txt"); string(b) != "1\n" {
		t.Errorf("a.txt = %q", b)
	}
}

// BenchmarkHeldAfterCollect is issue 11's memory figure: after a worker
// stages and discards, pushes and rolls back, and objects are collected,
// the heap holds within 1.3x of the live content.
func BenchmarkHeldAfterCollect(b *testing.B) {
	r := repo(b, true, map[string]string{"README.md": "# p\n"})
	const files, size = 64, 64 << 10
	var ratio float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		e := newEnv(b, r, config{})
		for round := 0; round < 4; round++ {
			for f := 0; f < files; f++ {
				e.write(b, fmt.Sprintf("d%d/f%d.bin", f%8, f), strings.Repeat(fmt.Sprintf("%d-%d;", round, f), size/8))
			}
			c, err := e.s.Stage(nil, "round")
			must(b, err)
			if round < 3 {
				_, err = e.s.Discard(c.ID.String(), false)
				must(b, err)
			}
		}
		e.s.Collect()
		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		live, _ := e.s.Workspace().Usage()
		ratio = float64(after.HeapAlloc-before.HeapAlloc) / float64(live.Bytes)
		runtime.KeepAlive(e)
		b.StartTimer()
	}
	b.ReportMetric(ratio, "heap/content")
	if ratio > 1.3 {
		b.Errorf("the heap holds %.2fx the live content after collection, more than 1.3x", ratio)
	}
}
