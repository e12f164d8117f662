package reviewkey_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/reviewkey"
)

// A key is made on first use, private, and read back the same; a key open
// to others, a symlink, or not a seed is refused with what to do.
func TestLoadOrCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, reviewkey.FileName)
	kp, created, err := reviewkey.LoadOrCreate(path)
	if err != nil || !created {
		t.Fatalf("first use: %v (created %v)", err, created)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key's file: %v %v", fi.Mode(), err)
	}
	again, created, err := reviewkey.LoadOrCreate(path)
	if err != nil || created || reviewkey.Public(again) != reviewkey.Public(kp) {
		t.Fatalf("second use: %v %v", err, created)
	}

	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := reviewkey.Load(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key open to the group: %v", err)
	}
	_ = os.Chmod(path, 0o600)

	link := filepath.Join(dir, "link.nk")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reviewkey.LoadOrCreate(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a symlink: %v", err)
	}
	dangling := filepath.Join(dir, "dangling.nk")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reviewkey.LoadOrCreate(dangling); err == nil {
		t.Fatal("a key was written through a dangling symlink")
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Fatal("the symlink's target was created")
	}

	bad := filepath.Join(dir, "bad.nk")
	if err := os.WriteFile(bad, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := reviewkey.Load(bad); err == nil || !strings.Contains(err.Error(), "not an nkeys user seed") {
		t.Fatalf("not a seed: %v", err)
	}
}

// Trusted takes public keys and files of them, and refuses anything else
// (a seed above all: it is the reviewer's secret).
func TestTrusted(t *testing.T) {
	dir := t.TempDir()
	a, _, err := reviewkey.LoadOrCreate(filepath.Join(dir, "a.nk"))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := reviewkey.LoadOrCreate(filepath.Join(dir, "b.nk"))
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "reviewers")
	if err := os.WriteFile(list, []byte("# the team\n"+reviewkey.Public(b)+"\n\n"+reviewkey.Public(a)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := reviewkey.Trusted([]string{reviewkey.Public(a), list})
	if err != nil || len(got) != 2 || got[0] != reviewkey.Public(a) || got[1] != reviewkey.Public(b) {
		t.Fatalf("trusted %v, %v", got, err)
	}
	seed, _ := a.Seed()
	for _, v := range []string{string(seed), "Unot-a-key", filepath.Join(dir, "a.nk"), filepath.Join(dir, "missing")} {
		_, err := reviewkey.Trusted([]string{v})
		if err == nil {
			t.Errorf("--reviewer-key %q was taken", v)
		} else if strings.Contains(err.Error(), string(seed)) {
			t.Errorf("the error shows the seed: %v", err)
		}
	}
}

// A --reviewer-key that is a public key is that key, even when a file of
// that name is in the working directory: another user who may write
// there (serve started in /tmp, a shared checkout) would otherwise put
// their own key in it and have it trusted in the reviewer's place.
func TestTrustedKeyIsNeverReadAsAFile(t *testing.T) {
	dir := t.TempDir()
	reviewer, _, err := reviewkey.LoadOrCreate(filepath.Join(dir, "reviewer.nk"))
	if err != nil {
		t.Fatal(err)
	}
	mallory, _, err := reviewkey.LoadOrCreate(filepath.Join(dir, "mallory.nk"))
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, reviewkey.Public(reviewer)), []byte(reviewkey.Public(mallory)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	got, err := reviewkey.Trusted([]string{reviewkey.Public(reviewer)})
	if err != nil || len(got) != 1 || got[0] != reviewkey.Public(reviewer) {
		t.Fatalf("--reviewer-key %s trusts %v (%v), want that key alone", reviewkey.Public(reviewer), got, err)
	}
}

// A file of keys that another user may write, or that another user owns
// (root aside), is refused: whoever may change it chooses who decides.
func TestTrustedRefusesAFileOthersMayWrite(t *testing.T) {
	dir := t.TempDir()
	a, _, err := reviewkey.LoadOrCreate(filepath.Join(dir, "a.nk"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o666, 0o664, 0o646} {
		list := filepath.Join(dir, "reviewers-"+mode.String())
		if err := os.WriteFile(list, []byte(reviewkey.Public(a)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(list, mode); err != nil {
			t.Fatal(err)
		}
		got, err := reviewkey.Trusted([]string{list})
		if err == nil || !strings.Contains(err.Error(), "chmod") {
			t.Errorf("a file of keys of mode %v: trusted %v, %v; want a refusal that says to chmod it", mode, got, err)
		}
	}
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(open, "reviewers")
	if err := os.WriteFile(list, []byte(reviewkey.Public(a)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := reviewkey.Trusted([]string{list}); err == nil {
		t.Errorf("a file of keys in a directory anyone may write (and so replace it): trusted %v", got)
	}
	if os.Getuid() == 0 {
		other := filepath.Join(dir, "others")
		if err := os.WriteFile(other, []byte(reviewkey.Public(a)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if got, err := reviewkey.Trusted([]string{other}); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Errorf("a file of keys of uid 4242: trusted %v, %v", got, err)
		}
	}
}

// TestTrustedTakesAReadOnlyMountOfTheHosts: a file of keys on a read-only
// mount (a container's ":ro" bind mount of the host's file, as
// examples/fleet mounts ./reviewers) belongs to the host's user, not the
// server's, and nobody changes it from the server's side: it is taken.
func TestTrustedTakesAReadOnlyMountOfTheHosts(t *testing.T) {
	if list := os.Getenv("REVIEWKEY_RO_CHILD"); list != "" {
		got, err := reviewkey.Trusted([]string{list})
		if err != nil || len(got) != 1 {
			t.Fatalf("a read-only mount of another user's file of keys: %v, %v", got, err)
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Getuid() != 0 {
		t.Skip("needs root and unshare (util-linux) to make a read-only mount")
	}
	dir := t.TempDir()
	a, _, err := reviewkey.LoadOrCreate(filepath.Join(dir, "a.nk"))
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "etc")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(mnt, "reviewers")
	if err := os.WriteFile(list, []byte(reviewkey.Public(a)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(list, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" -test.run='^TestTrustedTakesAReadOnlyMountOfTheHosts$'`, "sh", mnt, os.Args[0])
	cmd.Env = append(os.Environ(), "REVIEWKEY_RO_CHILD="+list)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestTrustedRefusesAFIFO: a --reviewer-key naming a FIFO (or any file
// that blocks on open) stopped the server's start for good, waiting for a
// writer; it is refused as not a regular file.
func TestTrustedRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "reviewers")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := reviewkey.Trusted([]string{fifo})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a FIFO as --reviewer-key: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Trusted still waits on the FIFO after 5 s")
	}
}
