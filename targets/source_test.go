package targets_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/targettest"
)

// Every blob source of a lazy base runs the one suite: a local
// repository's as a pull makes it (a working tree's files read first, or
// a bare repository's objects) and as a resumed session opens it again,
// and GitHub's, over the emulator, opened again.
func TestSourceSuite(t *testing.T) {
	ctx := context.Background()
	pulled := func(t *testing.T, dir string, bare bool) staging.BlobSource {
		open := targets.OpenLocal
		if bare {
			open = targets.OpenLocalBare
		}
		l, err := open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if _, err := l.Fetch(ctx, "refs/heads/main", nil, staging.NewStore(0)); err != nil {
			t.Fatal(err)
		}
		return targets.PulledSource(l)
	}
	reopened := func(t *testing.T, key string) staging.BlobSource {
		src, err := targets.OpenSource(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	workTree := func(t *testing.T) (*gitInspector, string) {
		dir := t.TempDir()
		run(t, dir, nil, nil, "init", "-q", "-b", "main", ".")
		return &gitInspector{dir: dir, worktree: dir}, dir
	}
	bareRepo := func(t *testing.T) (*gitInspector, string) {
		dir := t.TempDir()
		run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main", ".")
		return &gitInspector{dir: dir}, dir
	}
	for _, c := range []struct {
		name string
		new  func(t *testing.T) (targettest.Inspector, string, func(*testing.T) staging.BlobSource)
		skip []string
	}{
		{"LocalWorkingTree", func(t *testing.T) (targettest.Inspector, string, func(*testing.T) staging.BlobSource) {
			insp, dir := workTree(t)
			return insp, dir, func(t *testing.T) staging.BlobSource {
				// Checked out again as git writes it: lines.crlf now differs
				// from its blob, so the working tree's reader must pass it
				// on to git.
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if e.Name() != ".git" {
						os.RemoveAll(filepath.Join(dir, e.Name()))
					}
				}
				run(t, dir, nil, nil, "checkout-index", "-f", "-a")
				return pulled(t, dir, false)
			}
		}, nil},
		{"LocalWorkingTreeReopened", func(t *testing.T) (targettest.Inspector, string, func(*testing.T) staging.BlobSource) {
			insp, dir := workTree(t)
			return insp, dir, func(t *testing.T) staging.BlobSource { return reopened(t, "local:"+dir) }
		}, nil},
		{"LocalBare", func(t *testing.T) (targettest.Inspector, string, func(*testing.T) staging.BlobSource) {
			insp, dir := bareRepo(t)
			return insp, dir, func(t *testing.T) staging.BlobSource { return pulled(t, dir, true) }
		}, nil},
		{"LocalBareReopened", func(t *testing.T) (targettest.Inspector, string, func(*testing.T) staging.BlobSource) {
			insp, dir := bareRepo(t)
			return insp, dir, func(t *testing.T) staging.BlobSource { return reopened(t, "local-bare:"+dir) }
		}, nil},
		{"GitHubReopened", func(t *testing.T) (targettest.Inspector, string, func(*testing.T) staging.BlobSource) {
			g, emu, insp, _ := emulated(t, targets.GitHubOptions{})
			opt := targets.GitHubOptions{APIURL: emu.URL, GitURL: emu.GitURL, Token: emuToken}
			return insp, emu.Dir(), func(t *testing.T) staging.BlobSource {
				src, err := targets.OpenSourceWith(ctx, g.ID(), opt)
				if err != nil {
					t.Fatal(err)
				}
				return src
			}
		}, []string{
			// GitHub answers a want of an object it lacks with "not our
			// ref", which ghSource passes on as it is: the store then
			// stops at this source instead of asking the next one.
			"MissingIsNotFound",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // independent repositories; GitHub's round trips are slow
			targettest.SourceSuite(t, targettest.SourceHarness{New: c.new, Skip: c.skip})
		})
	}
}
