package memfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

// snapFiles reads every file and symlink of a snapshot.
func snapFiles(t testing.TB, s *memfs.Snapshot) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := s.Walk(func(e memfs.Entry) error {
		data, err := e.Content()
		out[e.Path] = entry{mode: e.Mode, data: string(data)}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// filesOf keeps the files and symlinks of a dump.
func filesOf(tree map[string]entry) map[string]entry {
	out := map[string]entry{}
	for p, e := range tree {
		if !e.mode.IsDir() {
			out[p] = e
		}
	}
	return out
}

func diffOf(cs []memfs.Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Kind.String()+" "+c.Path)
	}
	return out
}

// TestRandomSnapshots drives random changes, snapshots, restores, rebases
// and overlays, checking each against brute force: snapshots never change,
// Restore gives back exactly the recorded tree, Changes is the diff against
// whatever the base now is, and Diff and Overlay agree with maps of files.
func TestRandomSnapshots(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			w := newWorkspace(t)
			names := []string{"a", "b", "d/x", "d/y", "d/e/z", "e", "d/e", "f/g/h"}
			pick := func() string { return names[rng.IntN(len(names))] }
			type snap struct {
				s    *memfs.Snapshot
				tree map[string]entry
			}
			snaps := []snap{{w.Snapshot(), dumpTree(t, w)}}
			base := map[string]entry{}
			for step := 0; step < 200; step++ {
				switch rng.IntN(10) {
				case 0, 1, 2:
					w.WriteFile(pick(), []byte(fmt.Sprint(rng.IntN(4))), 0)
				case 3:
					w.RemoveAll(pick())
				case 4:
					w.Rename(pick(), pick())
				case 5:
					w.Chmod(pick(), 0o755)
				case 6:
					snaps = append(snaps, snap{w.Snapshot(), dumpTree(t, w)})
				case 7:
					sn := snaps[rng.IntN(len(snaps))]
					if err := w.Restore(sn.s); err != nil {
						t.Fatal(err)
					}
					if got := dumpTree(t, w); !reflect.DeepEqual(got, sn.tree) {
						t.Fatalf("step %d: Restore gave\n%v\nwant\n%v", step, got, sn.tree)
					}
				case 8:
					sn := snaps[rng.IntN(len(snaps))]
					w.SetBase(sn.s)
					base = filesOf(sn.tree)
				case 9:
					a, b := snaps[rng.IntN(len(snaps))], snaps[rng.IntN(len(snaps))]
					af, bf := filesOf(a.tree), filesOf(b.tree)
					if got, want := diffOf(a.s.Diff(b.s)), bruteDiff(af, bf); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
						t.Fatalf("step %d: Diff\n got %v\nwant %v", step, got, want)
					}
					var paths []string
					for _, c := range a.s.Diff(b.s) {
						if rng.IntN(2) == 0 {
							paths = append(paths, c.Path)
						}
					}
					o, err := w.Overlay(a.s, b.s, paths)
					if err != nil {
						break // a partial change that needs another one: refused
					}
					want := map[string]entry{}
					for p, e := range af {
						want[p] = e
					}
					for _, p := range paths {
						if e, ok := bf[p]; ok {
							want[p] = e
						} else {
							delete(want, p)
						}
					}
					if got := snapFiles(t, o); !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d: Overlay of %v\n got %v\nwant %v", step, paths, got, want)
					}
				}
				now := filesOf(dumpTree(t, w))
				if got, want := changesOf(w), bruteDiff(base, now); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("step %d: Changes\n got %v\nwant %v", step, got, want)
				}
				live, held := w.Usage()
				xlive, xheld := memfs.ExactUsage(w)
				if live != xlive || held.Bytes < xheld.Bytes || held.Files < xheld.Files || held.Dirs < xheld.Dirs {
					t.Fatalf("step %d: tallies live %+v held %+v, recount %+v %+v", step, live, held, xlive, xheld)
				}
			}
			for i, sn := range snaps {
				if got := snapFiles(t, sn.s); !reflect.DeepEqual(got, filesOf(sn.tree)) {
					t.Fatalf("snapshot %d changed after it was taken", i)
				}
			}
		})
	}
}

func TestOverlayRefusesPartialChanges(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "a", "file")
	mustWrite(t, w, "d/x", "x")
	before := w.Snapshot()
	must(t, w.Remove("a"))
	mustWrite(t, w, "a/b", "now a dir")
	must(t, w.RemoveAll("d"))
	mustWrite(t, w, "d", "now a file")
	after := w.Snapshot()
	if _, err := w.Overlay(before, after, []string{"a/b"}); err == nil || !strings.Contains(err.Error(), "parent of a/b is a file") {
		t.Errorf("a/b without removing the file a: %v", err)
	}
	if _, err := w.Overlay(before, after, []string{"d"}); err == nil || !strings.Contains(err.Error(), "d is a directory") {
		t.Errorf("the file d without removing d/x: %v", err)
	}
	o, err := w.Overlay(before, after, []string{"a", "a/b", "d", "d/x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := snapFiles(t, o), snapFiles(t, after); !reflect.DeepEqual(got, want) {
		t.Errorf("whole overlay %v, want %v", got, want)
	}
	if _, err := w.Overlay(before, after, []string{"../x"}); err == nil {
		t.Error("an invalid path was overlaid")
	}
}

// Removing the last file of a directory in an overlay removes the
// directory, as git would.
func TestOverlayPrunesEmptyDirectories(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "a/b/c", "c")
	mustWrite(t, w, "keep", "k")
	before := w.Snapshot()
	must(t, w.RemoveAll("a"))
	o, err := w.Overlay(before, w.Snapshot(), []string{"a/b/c"})
	must(t, err)
	must(t, w.Restore(o))
	if _, err := w.Stat("a"); err == nil {
		t.Error("the emptied directory a is still there")
	}
}

// A snapshot is safe to read while the workspace changes; Lookup shares
// the content instead of copying it.
func TestSnapshotReadsWhileWorkspaceChanges(t *testing.T) {
	w := seeded(t, 200, 100)
	s := w.Snapshot()
	want := snapFiles(t, s)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			w.WriteFile(fmt.Sprintf("d%02d/f%05d.txt", i%100, i%200), []byte("changed"), 0)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			if got := snapFiles(t, s); !reflect.DeepEqual(got, want) {
				t.Error("snapshot changed under concurrent writes")
				return
			}
		}
	}()
	wg.Wait()
	e1, _ := s.Lookup("d00/f00000.txt")
	e2, _ := s.Lookup("d00/f00000.txt")
	d1, _ := e1.Content()
	d2, _ := e2.Content()
	if &d1[0] != &d2[0] {
		t.Error("Lookup copied the content")
	}
	if _, ok := s.Lookup("d00"); ok {
		t.Error("Lookup found a directory")
	}
}

func TestSetBaseRetracksCheckpoints(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "a", "1")
	cp, _ := w.Checkpoint("cp")
	mustWrite(t, w, "b", "2")
	w.SetBase(w.Snapshot()) // everything so far becomes the base
	if ch := w.Changes(); len(ch) != 0 {
		t.Errorf("changes right after SetBase(live): %v", ch)
	}
	if _, err := w.Rollback(cp.Name); err != nil {
		t.Fatal(err)
	}
	// Against the new base, the checkpoint's state lacks b.
	if got := changesOf(w); !reflect.DeepEqual(got, []string{"delete b"}) {
		t.Errorf("changes after rolling back past the new base: %v", got)
	}
}

func TestRestoreRespectsQuota(t *testing.T) {
	w := newWorkspace(t, memfs.WithLimits(memfs.Limits{MaxTotalBytes: 3000}))
	mustWrite(t, w, "big", strings.Repeat("x", 2000))
	s := w.Snapshot()
	must(t, w.Remove("big"))
	mustWrite(t, w, "other", strings.Repeat("y", 2000))
	w.SetBase(w.Snapshot()) // the base keeps "other"; nothing keeps s
	if err := w.Restore(s); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Error("restoring past the quota succeeded")
	}
	if _, err := w.Stat("other"); err != nil {
		t.Error("a refused Restore changed the workspace")
	}
}

func TestSnapshotEntries(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "run.sh", "#!")
	must(t, w.Chmod("run.sh", 0o755))
	must(t, w.Symlink("run.sh", "link"))
	s := w.Snapshot()
	var got []string
	s.Walk(func(e memfs.Entry) error {
		data, _ := e.Content()
		got = append(got, fmt.Sprintf("%s %v %s", e.Path, e.Mode, data))
		return nil
	})
	sort.Strings(got)
	want := []string{"link " + (fs.ModeSymlink | 0o777).String() + " run.sh", "run.sh -rwxr-xr-x #!"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
}

// WalkVisible lists what fs.WalkDir over the worker's io/fs view lists,
// and ResolveIn answers what Stat answers, on a tree holding entries the
// deny list covers (as a resumed session whose deny list grew may).
func TestWalkVisibleIsTheWorkersView(t *testing.T) {
	w, err := memfs.New(memfs.WithDeny("secret/", "*.tok", "**/deep/x.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := func(p string) memfs.Delta { return memfs.Delta{Path: p, Mode: fs.ModeDir | 0o755} }
	file := func(p string) memfs.Delta { return memfs.Delta{Path: p, Mode: 0o644, Data: []byte(p)} }
	snap, err := w.Apply(nil, []memfs.Delta{
		dir("secret"), file("secret/a"), dir("d"), dir("d/deep"), file("d/deep/x.txt"), file("d/deep/y.txt"),
		file("d/.env"), file("d/k.tok"), file("d/ok"), file("top"), dir("d/SECRET"), file("d/SECRET/b"),
		{Path: "link", Mode: fs.ModeSymlink | 0o777, Data: []byte("d")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Restore(snap); err != nil {
		t.Fatal(err)
	}
	snap = w.Snapshot()
	for _, root := range []string{".", "d", "link", "d/deep", "secret", "nope", "top", "d/.env"} {
		var want []string
		wantErr := fs.WalkDir(w.FS(), root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				want = append(want, p)
			}
			return err
		})
		canon, isDir, err := w.ResolveIn(snap, root)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("ResolveIn(%q) = %v, want %v", root, err, wantErr)
			continue
		}
		if err != nil || !isDir {
			continue
		}
		var got []string
		if err := w.WalkVisible(snap, canon, func(e memfs.Entry) error {
			rel := e.Path
			if canon != "" {
				rel = e.Path[len(canon)+1:]
			}
			if root != "." {
				rel = root + "/" + rel
			}
			got = append(got, rel)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("WalkVisible(%q) = %q, want %q", root, got, want)
		}
	}
}
