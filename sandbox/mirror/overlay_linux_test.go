package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// overlayFiles makes in dir what an overlay's upper layer may hold: a
// whiteout (a character device 0:0), another character device (1:3, as
// /dev/null), a regular file; and directories marked opaque ("y"), marked
// otherwise ("x": whiteouts of the other kind below, not opaque) and not
// marked. It skips when this user may not make devices or set the marks.
func overlayFiles(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mknod(filepath.Join(dir, "whiteout"), unix.S_IFCHR|0o600, 0); err != nil {
		t.Skipf("making a whiteout: %v", err)
	}
	if err := unix.Mknod(filepath.Join(dir, "device"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("making a device: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, mark := range map[string]string{"opaque": "y", "marked-x": "x", "plain": ""} {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if mark == "" {
			continue
		}
		if err := unix.Setxattr(p, opaqueXattr, []byte(mark), 0); err != nil {
			t.Skipf("setting %s: %v", opaqueXattr, err)
		}
	}
}

// Both readers of an upper layer (the workspace's, through the mirror's
// descriptor, and ~/.cache's, by path) take the same files for whiteouts
// and the same directories for opaque: the marks have one definition.
func TestOverlayMarks(t *testing.T) {
	dir := t.TempDir()
	overlayFiles(t, dir)
	for _, tc := range []struct {
		name             string
		whiteout, opaque bool
	}{
		{"whiteout", true, false},
		{"device", false, false},
		{"file", false, false},
		{"opaque", false, true},
		{"marked-x", false, false},
		{"plain", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				t.Fatal(err)
			}
			if got := isWhiteout(st.Mode, st.Rdev); got != tc.whiteout {
				t.Errorf("isWhiteout = %v, want %v", got, tc.whiteout)
			}
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := isWhiteoutInfo(fi); got != tc.whiteout {
				t.Errorf("isWhiteoutInfo = %v, want %v", got, tc.whiteout)
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return
			}
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if got := isOpaqueFD(fd); got != tc.opaque {
				t.Errorf("isOpaqueFD = %v, want %v", got, tc.opaque)
			}
			if got := isOpaquePath(p); got != tc.opaque {
				t.Errorf("isOpaquePath = %v, want %v", got, tc.opaque)
			}
		})
	}
}

// A run's upper layer read back (Changes) and merged (MergeLayer) is
// taken the same way: the whiteout removes, the device is something the
// run made (the workspace refuses it; the cache has no use for it), and
// an opaque directory replaces what was there. Before, the merge took any
// character device for a whiteout and removed what the cache held there.
func TestUpperLayerReadAlikeByBothReaders(t *testing.T) {
	m, err := New(filepath.Join(t.TempDir(), "mirrors"), os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	_, upper, _, _ := m.Dirs()
	overlayFiles(t, upper)

	got := map[string]string{}
	cs, err := m.Changes(1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		got[c.Path] = map[ChangeKind]string{Wrote: "wrote", Linked: "linked", Removed: "removed", MadeDir: "dir", Replaced: "replaced"}[c.Kind] + " " + c.Other
	}
	want := map[string]string{
		"whiteout": "removed ", "device": "wrote a character device", "file": "wrote ",
		"opaque": "replaced ", "marked-x": "dir ", "plain": "dir ",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("Changes: %s is %q, want %q", p, got[p], w)
		}
	}

	dst := t.TempDir()
	for _, name := range []string{"whiteout", "device", "opaque", "plain"} {
		if err := os.MkdirAll(filepath.Join(dst, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name, "old"), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := MergeLayer(upper, dst); err != nil {
		t.Fatal(err)
	}
	for name, kept := range map[string]bool{"whiteout": false, "device/old": true, "opaque/old": false, "plain/old": true, "file": true} {
		_, err := os.Lstat(filepath.Join(dst, name))
		if exists := err == nil; exists != kept {
			t.Errorf("after the merge, %s there: %v, want %v (%v)", name, exists, kept, err)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
