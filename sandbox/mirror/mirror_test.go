package mirror_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/sandbox/mirror"
)

// A root server's mirror belongs to the jail's user, so any process of
// that user on the host may swap a directory of it for a symlink to a
// directory outside, between two of the server's steps. Whatever it
// swaps, the server writes, moves, removes and reads nothing outside the
// mirror: the step errs, or acts on the link itself. Each case swaps one
// directory (as that user may) and then takes one step of the mirror's.
func TestMirrorFollowsNoLinkItsUserPlants(t *testing.T) {
	for _, tc := range []struct {
		name string
		// synced: whether lower holds the workspace before the swap.
		synced bool
		// swap is the mirror's directory (below its root) made a link
		// to the outside directory.
		swap string
		// step takes the mirror's step after the swap; it may err.
		step func(t *testing.T, x *synced) error
	}{
		{"lower, before the first sync", false, "lower", func(t *testing.T, x *synced) error {
			_, _, err := x.m.Sync(context.Background(), x.ws.Snapshot())
			return err
		}},
		{"a directory of lower, before a sync", true, "lower/d", func(t *testing.T, x *synced) error {
			write(t, x.ws, "d/new.txt", "new\n")
			write(t, x.ws, "d/b.txt", "b, changed\n")
			_, _, err := x.m.Sync(context.Background(), x.ws.Snapshot())
			return err
		}},
		{"lower, before a sync", true, "lower", func(t *testing.T, x *synced) error {
			write(t, x.ws, "new.txt", "new\n")
			_, _, err := x.m.Sync(context.Background(), x.ws.Snapshot())
			return err
		}},
		{"upper, before the changes are read", true, "upper", readChanges},
		{"a directory of upper, before the changes are read", true, "upper/d", readChanges},
		{"lower, before a run's changes are promoted", true, "lower", func(t *testing.T, x *synced) error {
			return x.promote(t)
		}},
		{"a directory of lower, before a run's changes are promoted", true, "lower/d", func(t *testing.T, x *synced) error {
			return x.promote(t)
		}},
		{"upper, before a reset", true, "upper", func(t *testing.T, x *synced) error {
			return x.m.Reset()
		}},
		{"work, before a reset", true, "work", func(t *testing.T, x *synced) error {
			return x.m.Reset()
		}},
		{"a directory of lower, before its times are set", true, "lower/d", func(t *testing.T, x *synced) error {
			_, err := x.m.LowerTime("d/secret.txt", time.Unix(1, 0))
			return err
		}},
		{"a directory of lower, before it is listed", true, "lower/d", func(t *testing.T, x *synced) error {
			ents, err := x.m.ReadLowerDir("d")
			for _, e := range ents {
				if e.Name() == "secret.txt" {
					t.Errorf("ReadLowerDir listed the outside directory")
				}
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := traversable(t)
			outer := filepath.Join(base, "outside")
			if err := os.Mkdir(outer, 0o755); err != nil {
				t.Fatal(err)
			}
			old := time.Unix(1e9, 0)
			for p, c := range map[string]string{"secret.txt": "secret\n", "d/secret.txt": "secret\n"} {
				p = filepath.Join(outer, p)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
					t.Fatal(err)
				}
				os.Chtimes(p, old, old)
			}
			before := listTree(t, outer)

			ws, err := memfs.New()
			if err != nil {
				t.Fatal(err)
			}
			write(t, ws, "a.txt", "a\n")
			write(t, ws, "d/b.txt", "b\n")
			m, err := newMirror(filepath.Join(base, "mirrors"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			lower, upper, _, _ := m.Dirs()
			mirrorDir := filepath.Dir(lower)
			x := &synced{m: m, ws: ws}
			if tc.synced {
				x.start = ws.Snapshot()
				if _, _, err := m.Sync(context.Background(), x.start); err != nil {
					t.Fatal(err)
				}
				// What a run wrote: a file at the top and one in d.
				os.MkdirAll(filepath.Join(upper, "d"), 0o755)
				os.WriteFile(filepath.Join(upper, "ran.txt"), []byte("ran\n"), 0o644)
				os.WriteFile(filepath.Join(upper, "d", "ran.txt"), []byte("ran\n"), 0o644)
			}

			// The swap: the directory moved aside, a link in its place.
			swapped := filepath.Join(mirrorDir, filepath.FromSlash(tc.swap))
			target := outer
			if strings.HasSuffix(tc.swap, "/d") {
				target = filepath.Join(outer, "d")
			}
			if err := os.Rename(swapped, swapped+".aside"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, swapped); err != nil {
				t.Fatal(err)
			}

			err = tc.step(t, x)
			t.Logf("the step: %v", err)
			if after := listTree(t, outer); after != before {
				t.Errorf("the directory outside changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}
}

// synced is a mirror of ws, which held start when lower was synced.
type synced struct {
	m     *mirror.Mirror
	ws    *memfs.Workspace
	start *memfs.Snapshot
}

// promote takes in the changes of a run that wrote ran.txt and d/ran.txt
// (in upper), as a run's end does: read, the workspace given them, and
// moved into lower.
func (x *synced) promote(t *testing.T) error {
	cs, err := x.m.Changes(1<<20, 0)
	if err != nil {
		return err
	}
	write(t, x.ws, "ran.txt", "ran\n")
	write(t, x.ws, "d/ran.txt", "ran\n")
	x.m.Promote(x.start, x.ws.Snapshot(), cs)
	return nil
}

// readChanges reads a run's changes, none of which may hold what is outside.
func readChanges(t *testing.T, x *synced) error {
	cs, err := x.m.Changes(1<<20, 0)
	for _, c := range cs {
		if strings.Contains(string(c.Data), "secret") {
			t.Errorf("Changes read %s outside the mirror: %q", c.Path, c.Data)
		}
	}
	return err
}

func write(t *testing.T, ws *memfs.Workspace, p, c string) {
	t.Helper()
	if err := ws.WriteFile(p, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}

// listTree is every name below dir with its mode, time and content.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String() + " " + fi.ModTime().UTC().Format(time.RFC3339Nano))
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + strings.TrimSpace(string(data)))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The mirrors' parent is reached by path: one that is a link, or another
// user's directory (who could swap a mirror in it for a link), is refused,
// with advice that works.
func TestMirrorParentNotThisUsersRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, parent string)
	}{
		{"a symlink", func(t *testing.T, parent string) {
			if err := os.Symlink(t.TempDir(), parent); err != nil {
				t.Fatal(err)
			}
		}},
		{"another user's directory", func(t *testing.T, parent string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a directory to another user")
			}
			if err := os.Mkdir(parent, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(parent, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := filepath.Join(traversable(t), "mirrors")
			tc.make(t, parent)
			m, err := newMirror(parent)
			if err == nil {
				m.Close()
				t.Fatal("New took it")
			}
			if !strings.Contains(err.Error(), "remove it") {
				t.Errorf("error %q gives no advice", err)
			}
			if err := os.Remove(parent); err != nil {
				t.Fatal(err)
			}
			m, err = newMirror(parent)
			if err != nil {
				t.Fatalf("after the advice: %v", err)
			}
			m.Close()
		})
	}
}

// Emptying the session's own cache follows no link its user planted: not
// one inside the cache, not one in the cache's place.
func TestMirrorClearCacheFollowsNoLink(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		base := t.TempDir()
		outside := filepath.Join(base, "outside")
		if err := os.MkdirAll(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := newMirror(filepath.Join(base, "mirrors"))
		if err != nil {
			t.Fatal(err)
		}
		cache := m.Cache()
		if err := os.WriteFile(filepath.Join(cache, "built"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if inPlace {
			if err := os.RemoveAll(cache); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, cache); err != nil {
				t.Fatal(err)
			}
			if err := m.ClearCache(); err == nil {
				t.Error("a link in the cache's place was taken for the cache")
			}
		} else {
			if err := os.Symlink(outside, filepath.Join(cache, "link")); err != nil {
				t.Fatal(err)
			}
			if err := m.ClearCache(); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(cache); len(ents) != 0 {
				t.Errorf("the cache still holds %v", ents)
			}
		}
		if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "keep\n" {
			t.Errorf("in place %v: the link's target was touched: %q %v", inPlace, b, err)
		}
		_ = m.Close()
	}
}

// newMirror makes a mirror under parent for the jails' user, as a run's.
func newMirror(parent string) (*mirror.Mirror, error) {
	uid, gid := sandbox.HostUser()
	return mirror.New(parent, uid, gid)
}

// traversable is a temporary directory the jails' user can pass through
// to what is made in it (a root server's jails act as nobody).
func traversable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	return dir
}
