package staging_test

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/staging"
)

// Issue 11: a directory replaced by a file, and a file replaced by a
// directory, each in one commit, through stage, discard, pick and rebase.
func TestTypeChangeInOneCommit(t *testing.T) {
	tests := []struct {
		name      string
		before    map[string]string
		change    func(t *testing.T, e *env)
		wantFiles []string
		wantTree  []string
	}{
		{
			name:   "directory to file",
			before: map[string]string{"d/a.txt": "a", "d/sub/b.txt": "b", "keep.txt": "k"},
			change: func(t *testing.T, e *env) {
				must(t, e.ws.RemoveAll("d"))
				e.write(t, "d", "now a file")
			},
			wantFiles: []string{"create d 100644", "delete d/a.txt 100644", "delete d/sub/b.txt 100644"},
			wantTree:  []string{"100644 d", "100644 keep.txt"},
		},
		{
			name:   "file to directory",
			before: map[string]string{"f": "a file", "keep.txt": "k"},
			change: func(t *testing.T, e *env) {
				must(t, e.ws.Remove("f"))
				e.write(t, "f/inside.txt", "now a directory")
			},
			wantFiles: []string{"delete f 100644", "create f/inside.txt 100644"},
			wantTree:  []string{"100644 f/inside.txt", "100644 keep.txt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			for p, c := range tt.before {
				e.write(t, p, c)
			}
			_, err := e.area.Stage(nil, "Before")
			must(t, err)
			e.write(t, "other.txt", "staged first")
			first, err := e.area.Stage(nil, "Other")
			must(t, err)
			tt.change(t, e)
			c, err := e.area.Stage(nil, "Change the type")
			must(t, err)
			if got := fileList(c); !reflect.DeepEqual(got, tt.wantFiles) {
				t.Errorf("files %v, want %v", got, tt.wantFiles)
			}
			check := func(what string, id *staging.Commit) {
				t.Helper()
				repo := newRepo(t)
				export(t, e.store, repo, id.ID)
				fsck(t, repo)
				// "mode hash\tpath", the type-changed entries only.
				var tree, want []string
				for _, l := range lsTree(t, repo, "main") {
					mode, _, _ := strings.Cut(l, " ")
					_, p, _ := strings.Cut(l, "\t")
					if p != "other.txt" && p != "keep.txt" {
						tree = append(tree, mode+" "+p)
					}
				}
				for _, w := range tt.wantTree {
					if !strings.HasSuffix(w, " keep.txt") {
						want = append(want, w)
					}
				}
				if !reflect.DeepEqual(tree, want) {
					t.Errorf("%s: tree %v, want %v", what, tree, want)
				}
			}
			check("stage", c)

			// Discarding the commit before it rebuilds this one.
			d, err := e.area.Discard(first.ID)
			must(t, err)
			rebuilt, err := e.area.Lookup(d.Rebuilt[c.ID].String())
			must(t, err)
			if got := fileList(rebuilt); !reflect.DeepEqual(got, tt.wantFiles) {
				t.Errorf("after discard: files %v, want %v", got, tt.wantFiles)
			}
			check("discard", rebuilt)

			// Picking all of its paths keeps it whole.
			var paths []string
			for _, f := range rebuilt.Files {
				paths = append(paths, f.Path)
			}
			picked, err := e.area.Pick(rebuilt.ID, paths)
			must(t, err)
			check("pick", picked)
		})
	}
}

func TestTypeChangeSurvivesRebase(t *testing.T) {
	repo := newRepo(t)
	writeDisk(t, repo, map[string]string{"d/a.txt": "a", "up.txt": "1"})
	id := []string{"GIT_AUTHOR_NAME=o", "GIT_AUTHOR_EMAIL=o@b", "GIT_COMMITTER_NAME=o", "GIT_COMMITTER_EMAIL=o@b"}
	run(t, repo, "add", "-A")
	gitWith(t, repo, id, "commit", "-qm", "base")
	e := newEnv(t)
	base := importRepo(t, e.store, repo)
	_, err := e.area.SeedFrom(base, nil)
	must(t, err)
	must(t, e.ws.RemoveAll("d"))
	e.write(t, "d", "file now")
	c, err := e.area.Stage(nil, "d is a file")
	must(t, err)

	writeDisk(t, repo, map[string]string{"up.txt": "2"})
	gitWith(t, repo, id, "commit", "-qam", "upstream")
	onto := importRepo(t, e.store, repo)
	res, err := e.area.Rebase(onto)
	must(t, err)
	nu, err := e.area.Lookup(res.Rebuilt[c.ID].String())
	must(t, err)
	if got, want := fileList(nu), []string{"create d 100644", "delete d/a.txt 100644"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rebased files %v, want %v", got, want)
	}
	out := newRepo(t)
	export(t, e.store, out, nu.ID)
	fsck(t, out)
}

// Issue 11: Advance changed commits it had already handed out (their Base),
// a data race under -race with anyone reading them.
func TestAdvanceLeavesHandedOutCommitsAlone(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a", "1")
	c1, err := e.area.Stage(nil, "one")
	must(t, err)
	e.write(t, "b", "2")
	_, err = e.area.Stage(nil, "two")
	must(t, err)
	handed := e.area.Commits()
	before := handed[1].Base
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			_ = handed[1].Base
		}
	}()
	must(t, e.area.Advance(c1.ID))
	wg.Wait()
	if handed[1].Base != before {
		t.Errorf("a handed-out commit's Base changed from %s to %s", before, handed[1].Base)
	}
	if got := e.area.Commits(); len(got) != 1 || got[0].Base != c1.ID {
		t.Errorf("after Advance the chain is %+v; want one commit based on %s", got, c1.ID)
	}
}
