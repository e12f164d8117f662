package session_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/targets/githubemu"
	"github.com/airlock-dev/airlock/worker"
)

// Every blob of real repositories, pulled into a session as a lazy base
// and read back through it, is git's: one file at a time (read_file), and
// all at once (the stream a run's mirror and a search read). The Go
// toolchain's own source packed with deep delta chains (of which go-git's
// streamed reader rebuilt some wrongly), the same objects in several packs
// under a multi-pack-index, a repository borrowing them all through
// alternates, and a partial clone that had none of the blobs before the
// pull (which fetches them in one go, as git checkout would: listing
// their sizes would otherwise fetch them one by one). AIRLOCK_LONG_TESTS reads the whole of GOROOT/src (11,000
// files and more); the default, the directories where the wrong deltas
// were.
func TestEveryBlobOfRealRepositoriesReadsExact(t *testing.T) {
	dirs := []string{"syscall", "strings", "internal"}
	if os.Getenv("AIRLOCK_LONG_TESTS") != "" {
		dirs = nil
	}
	deep := gittest.GoSource(t, dirs...)
	git(t, deep, "repack", "-adfq", "--depth=250", "--window=250")
	git(t, deep, "config", "uploadpack.allowFilter", "true")
	blobs := gittest.Blobs(t, deep, "main")
	ids := make([]string, len(blobs))
	for i, b := range blobs {
		ids[i] = b.ID
	}
	want := map[string][]byte{}
	gittest.CatFile(t, deep, ids, func(id string, data []byte) { want[id] = bytes.Clone(data) })

	tmp := t.TempDir()
	midx := filepath.Join(tmp, "midx.git")
	git(t, tmp, "clone", "-q", "--bare", "--no-local", deep, midx)
	git(t, midx, "repack", "-adq", "--max-pack-size=1m")
	git(t, midx, "multi-pack-index", "write", "--bitmap")
	if packs, _ := filepath.Glob(filepath.Join(midx, "objects", "pack", "*.pack")); len(packs) < 2 {
		t.Fatalf("the multi-pack repository has %d pack(s)", len(packs))
	}
	shared := filepath.Join(tmp, "shared.git")
	git(t, tmp, "clone", "-q", "--bare", "--shared", deep, shared)
	partial := filepath.Join(tmp, "partial.git")
	git(t, tmp, "clone", "-q", "--bare", "--filter=blob:none", "file://"+deep, partial)
	if held := git(t, partial, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype)"); bytes.Count([]byte(held), []byte("blob")) != 0 {
		t.Fatalf("the partial clone holds blobs already")
	}

	for _, c := range []struct {
		name, repo string
	}{
		{"deep deltas", deep},
		{"multi-pack-index", midx},
		{"alternates", shared},
		{"partial clone", partial},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.repo, config{limits: realLimits})
			readsExact(t, e.s.Workspace(), len(blobs), want, -1)
		})
	}
	// The same commit on GitHub (the emulator, git's own http-backend
	// behind GitHub's API): its blobs are fetched over smart HTTP in
	// packs of their own, which go-git unpacks in memory.
	t.Run("github", func(t *testing.T) {
		const token = "ghp_realrepoTESTtoken00000000000000000"
		emu, err := githubemu.New(t.TempDir(), "octo-org", "src", token)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(emu.Close)
		git(t, "", "--git-dir="+deep, "push", "-q", emu.Dir(), "main")
		t.Setenv("AIRLOCK_GITHUB_API_URL", emu.URL)
		t.Setenv("AIRLOCK_GITHUB_GIT_URL", emu.GitURL)
		t.Setenv("GITHUB_TOKEN", token)
		spec := &worker.TargetSpec{Type: "github", Repo: "octo-org/src", Branch: "main"}
		e := newEnvWorker(t, &worker.Worker{
			Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
			DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{}, Limits: realLimits,
			AutoPull: []worker.PullSpec{{Path: ".", Source: spec}},
		}, config{})
		// A file read alone is a request to GitHub: a hundred of them,
		// and the stream's batches read the rest.
		readsExact(t, e.s.Workspace(), len(blobs), want, 100)
	})
}

// realLimits hold the Go toolchain's src.
var realLimits = memfs.Limits{MaxTotalBytes: 1 << 30, MaxFileBytes: 64 << 20, MaxFiles: 100_000}

// readsExact reads every file of ws, a lazy base of a commit of n blobs
// whose contents (by id) are want, one at a time as read_file does (the
// first oneByOne of them; -1: all) and all at once as a run's mirror and a
// search stream them, and checks each against git's.
func readsExact(t *testing.T, ws *memfs.Workspace, n int, want map[string][]byte, oneByOne int) {
	t.Helper()
	es := workspaceFiles(ws)
	lazy := 0
	for _, f := range es {
		if f.Lazy() {
			lazy++
		}
	}
	for i, f := range es {
		if i == oneByOne {
			break
		}
		got, err := ws.ReadFile(f.Path)
		if err != nil {
			t.Fatalf("read_file %s: %v", f.Path, err)
		}
		if !bytes.Equal(got, want[gittest.HexID(f.ID)]) {
			t.Fatalf("read_file %s: %d bytes that are not git's %d", f.Path, len(got), len(want[gittest.HexID(f.ID)]))
		}
	}
	// Every file of the commit is there, but those the deny list keeps
	// out (the *.pem of crypto's tests).
	if len(es) < n*98/100 {
		t.Fatalf("the workspace has %d files of the commit's %d", len(es), n)
	}
	if lazy == 0 {
		t.Fatal("nothing of the base is lazy: the pull copied the content")
	}
	var mu sync.Mutex
	exact := 0
	err := memfs.LoadEach(context.Background(), es, false, func(e memfs.Entry, data []byte, err error) error {
		if err != nil {
			t.Errorf("streaming %s: %v", e.Path, err)
			return nil
		}
		if !bytes.Equal(data, want[gittest.HexID(e.ID)]) {
			t.Errorf("streaming %s: %d bytes that are not git's", e.Path, len(data))
			return nil
		}
		mu.Lock()
		exact++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if exact != len(es) {
		t.Fatalf("%d of %d files streamed exact", exact, len(es))
	}
	t.Logf("%d files of the commit's %d, all exact (%d lazy when streamed)", exact, n, lazy)
}

// workspaceFiles lists the regular files of the workspace, in path order.
func workspaceFiles(ws *memfs.Workspace) []memfs.Entry {
	var es []memfs.Entry
	ws.Snapshot().Walk(func(e memfs.Entry) error {
		if e.Mode.IsRegular() {
			es = append(es, e)
		}
		return nil
	})
	return es
}
