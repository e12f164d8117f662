package mirror

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Both ways of opening a path below a directory (openat2 where the kernel
// has it, the walk a component at a time elsewhere) open what is there
// and refuse a link anywhere on the way, the last name's included, and a
// ".." out of it.
func TestOpenBeneathFollowsNoLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{"d", "d/e"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(root, "d/e/f.txt"), filepath.Join(outside, "f.txt")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"d/out": outside, "d/in": "e", "d/file": "e/f.txt"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	rootFd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rootFd)
	for name, open := range map[string]func(int, string, int, uint32) (int, error){
		"openBeneath": openBeneath, "openBeneathWalk": openBeneathWalk,
	} {
		for _, tc := range []struct {
			rel string
			ok  bool
		}{
			{"", true},
			{"d/e/f.txt", true},
			{"d/e", true},
			{"d/out/f.txt", false}, // a link out, on the way
			{"d/in/f.txt", false},  // a link in, on the way: refused all the same
			{"d/file", false},      // the last name a link
			{"d/out", false},
			{"d/../../" + filepath.Base(outside) + "/f.txt", false},
			{"..", false},
		} {
			fd, err := open(rootFd, tc.rel, unix.O_RDONLY, 0)
			if err == nil {
				unix.Close(fd)
			}
			if (err == nil) != tc.ok {
				t.Errorf("%s(%q): %v, want success %v", name, tc.rel, err, tc.ok)
			}
		}
	}
}
