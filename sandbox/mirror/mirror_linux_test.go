package mirror_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"golang.org/x/sys/unix"
)

// TestMirrorFollowsNoLinkItsUserPlants, raced: while the mirror reads a run's changes or writes a
// sync into lower, a process of the jail's user keeps exchanging a
// directory of it with a link to a directory outside (renameat2's
// RENAME_EXCHANGE, so one of the two names is always the directory).
// A check of the name before its use would lose that race now and then;
// a path resolved by the kernel in one step that follows no link never.
func TestMirrorRacedByItsUser(t *testing.T) {
	for _, tc := range []struct {
		name  string
		layer string // which of the mirror's directories is raced
		step  func(t *testing.T, x *synced, i int)
	}{
		{"reading a run's changes", "upper", func(t *testing.T, x *synced, i int) {
			cs, _ := x.m.Changes(1<<20, 0)
			for _, c := range cs {
				if strings.Contains(string(c.Data), "secret") {
					t.Fatalf("Changes read %s outside the mirror: %q", c.Path, c.Data)
				}
			}
		}},
		{"syncing", "lower", func(t *testing.T, x *synced, i int) {
			write(t, x.ws, fmt.Sprintf("d/n%d.txt", i), "new\n")
			x.m.Sync(context.Background(), x.ws.Snapshot())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := traversable(t)
			outer := filepath.Join(base, "outside", "d")
			if err := os.MkdirAll(outer, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outer, "f.txt"), []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := listTree(t, filepath.Dir(outer))
			ws, err := memfs.New()
			if err != nil {
				t.Fatal(err)
			}
			write(t, ws, "d/f.txt", "inside\n")
			m, err := newMirror(filepath.Join(base, "mirrors"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			x := &synced{m: m, ws: ws, start: ws.Snapshot()}
			if _, _, err := m.Sync(context.Background(), x.start); err != nil {
				t.Fatal(err)
			}
			lower, upper, _, _ := m.Dirs()
			layer := map[string]string{"lower": lower, "upper": upper}[tc.layer]
			if tc.layer == "upper" {
				// What a run wrote.
				os.MkdirAll(filepath.Join(upper, "d"), 0o755)
				os.WriteFile(filepath.Join(upper, "d", "f.txt"), []byte("inside\n"), 0o644)
			}
			d, link := filepath.Join(layer, "d"), filepath.Join(layer, "dx")

			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for n := 0; ; {
					select {
					case <-stop:
						return
					default:
					}
					// The mirror may have removed the link (and made d
					// again): the directory now in its place goes aside.
					if fi, err := os.Lstat(link); err == nil && fi.IsDir() {
						os.Rename(link, fmt.Sprintf("%s-%d", link, n))
						n++
					}
					os.Symlink(outer, link)
					os.Mkdir(d, 0o755)
					unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
				}
			}()
			deadline := time.Now().Add(time.Second)
			for i := 0; time.Now().Before(deadline) && !t.Failed(); i++ {
				tc.step(t, x, i)
				if after := listTree(t, filepath.Dir(outer)); after != before {
					t.Errorf("after %d steps, the directory outside changed:\n%s\nwas:\n%s", i+1, after, before)
				}
			}
			close(stop)
			<-done
		})
	}
}
