package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/airlock-dev/airlock/sandbox/mirror"
	"golang.org/x/sys/unix"
)

// A run's storage outside the workspace is bounded by the kernel: /tmp,
// the home and /dev/shm are directories of one tmpfs (the scratch) sized
// at the session's quota in bytes and inodes, and ~/.cache is an overlay
// whose upper layer is a tmpfs sized at the cache's room. The helper sends
// the server a descriptor of each tmpfs (on the socket the detached mounts
// came on): the server reads the scratch's use in O(1) (fstatfs) while the
// run goes, and merges the cache's upper layer into the cache after it,
// only when it fits. Both file systems die with the last descriptor.

// tmpfsOpts is a tmpfs's mount options for b.
func tmpfsOpts(mode string, b Bound) string {
	return fmt.Sprintf("mode=%s,size=%d,nr_inodes=%d", mode, max(b.Bytes, 1<<20), max(b.Files, 1)+16)
}

// storesHeld are the descriptors the helper sends: the scratch's root, and
// the cache layer's (or none).
type storesHeld struct{ scratch, cache int }

// mountScratch mounts the scratch at a hidden place under root, binds its
// directories at /tmp, the home and /dev/shm, and returns a descriptor of
// it, the hidden mount gone.
func mountScratch(root string, b Bound) (int, error) {
	at := filepath.Join(root, ".scratch")
	if err := os.Mkdir(at, 0o700); err != nil {
		return -1, err
	}
	if err := unix.Mount("tmpfs", at, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOpts("0755", b)); err != nil {
		return -1, fmt.Errorf("mounting the scratch: %w", err)
	}
	for _, d := range []struct{ name, path string }{
		{"tmp", "tmp"}, {"home", strings.TrimPrefix(Home, "/")}, {"shm", "dev/shm"},
	} {
		src, dst := filepath.Join(at, d.name), filepath.Join(root, d.path)
		if err := os.Mkdir(src, 0o755); err != nil {
			return -1, err
		}
		mode := os.FileMode(0o1777)
		if d.name == "home" {
			mode = 0o700
		}
		if err := os.Chmod(src, mode); err != nil {
			return -1, err
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return -1, err
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return -1, fmt.Errorf("binding the scratch's %s: %w", d.name, err)
		}
	}
	return detachHidden(at)
}

// detachHidden opens the file system mounted at at, then unmounts it from
// there and removes the mount point: what is bound from it stays.
func detachHidden(at string) (int, error) {
	fd, err := unix.Open(at, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Unmount(at, unix.MNT_DETACH); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("hiding %s: %w", at, err)
	}
	if err := os.Remove(at); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// mountCache mounts ~/.cache: the cache (lower, attached from detached or
// bound from its path) under an upper layer on a tmpfs of room, and
// returns a descriptor of that tmpfs.
func mountCache(root, cache string, detached int, room Bound) (int, error) {
	lower := filepath.Join(root, ".cache-lower")
	var err error
	if detached >= 0 {
		err = attach(detached, lower, true)
	} else {
		err = bindPath(cache, lower, true)
	}
	if err != nil {
		return -1, err
	}
	layer := filepath.Join(root, ".cache-layer")
	if err := os.Mkdir(layer, 0o700); err != nil {
		return -1, err
	}
	// A little over the room, so that a run that outgrows it is told (by
	// the merge) rather than only meeting a full disk.
	size := Bound{Bytes: room.Bytes + room.Bytes/8 + 1<<20, Files: room.Files + room.Files/8 + 64}
	if err := unix.Mount("tmpfs", layer, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOpts("0755", size)); err != nil {
		return -1, fmt.Errorf("mounting the cache's layer: %w", err)
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(filepath.Join(layer, d), 0o755); err != nil {
			return -1, err
		}
	}
	dst := filepath.Join(root, strings.TrimPrefix(Home, "/"), ".cache")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return -1, err
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, filepath.Join(layer, "upper"), filepath.Join(layer, "work"))
	if err := unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return -1, fmt.Errorf("mounting ~/.cache: %w", err)
	}
	if err := unix.Unmount(lower, unix.MNT_DETACH); err != nil {
		return -1, err
	}
	if err := os.Remove(lower); err != nil {
		return -1, err
	}
	return detachHidden(layer)
}

// sendStores is the helper's: the scratch's descriptor, and the cache
// layer's when there is one.
func sendStores(st storesHeld) error {
	fds := []int{st.scratch}
	if st.cache >= 0 {
		fds = append(fds, st.cache)
	}
	return unix.Sendmsg(mountsFD, []byte{1}, unix.UnixRights(fds...), nil, 0)
}

// receiveStores is the server's side of sendStores; ok is false when the
// helper ended before sending (its setup failed).
func receiveStores(sock *os.File) (st storesHeld, ok bool) {
	st = storesHeld{-1, -1}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*2))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return st, false
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return st, false
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	if len(fds) > 0 {
		st.scratch = fds[0]
	}
	if len(fds) > 1 {
		st.cache = fds[1]
	}
	return st, len(fds) > 0
}

func (st storesHeld) close() {
	for _, fd := range []int{st.scratch, st.cache} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// used is what the file system of fd holds: bytes and inodes (the root
// directory and the few the jail made are counted too).
func used(fd int) (bytes, files int64) {
	var s unix.Statfs_t
	if unix.Fstatfs(fd, &s) != nil {
		return 0, 0
	}
	return int64(s.Blocks-s.Bfree) * int64(s.Bsize), int64(s.Files - s.Ffree)
}

// keepCache merges the cache layer of layerFD into the cache at dir when
// what the run added fits room; otherwise it keeps none of it, and says
// why.
func keepCache(layerFD int, dir string, room Bound, r *Report) error {
	b, f := used(layerFD)
	// The layer's root, upper and work directories are not the run's.
	f -= 3
	if b > room.Bytes || f > room.Files {
		r.CacheDropped = fmt.Sprintf("the run wrote %d bytes in %d files to ~/.cache, over the room the cache has (%d bytes, %d files): none of it was kept", b, f, room.Bytes, room.Files)
		return nil
	}
	r.CacheAdded = Bound{Bytes: b, Files: f}
	upper := fmt.Sprintf("/proc/self/fd/%d/upper", layerFD)
	dirFD, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dirFD)
	dst := fmt.Sprintf("/proc/self/fd/%d", dirFD)
	uid, gid := HostUser()
	if uid == os.Getuid() {
		return mirror.MergeLayer(upper, dst)
	}
	// A root server merges as the jail's user, on a thread of its own
	// (the file system ids are a thread's): the cache is that user's
	// directory, which a process of that user might be changing, so the
	// merge may reach only what that user could.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var err error
		if err = unix.Setfsgid(gid); err == nil {
			err = unix.Setfsuid(uid)
		}
		if fsuid, _ := unix.SetfsuidRetUid(-1); err == nil && fsuid != uid {
			err = fmt.Errorf("acting as uid %d: still %d", uid, fsuid)
		}
		if err == nil {
			err = mirror.MergeLayer(upper, dst)
		}
		// Whether these worked is checked below.
		_ = unix.Setfsuid(os.Getuid())
		_ = unix.Setfsgid(os.Getgid())
		// The thread goes back to the pool only as it was: a thread that
		// ends kills the helpers started from it (their Pdeathsig), so
		// ending it is for when it cannot be restored.
		if fsuid, _ := unix.SetfsuidRetUid(-1); fsuid == os.Getuid() {
			if fsgid, _ := unix.SetfsgidRetGid(-1); fsgid == os.Getgid() {
				runtime.UnlockOSThread()
			}
		}
		errc <- err
	}()
	return <-errc
}

// Scratch tells how much the run's /tmp, home and /dev/shm hold now (one
// statfs), while it goes; ok is false before the jail is up and after the
// run.
func (r *Report) Scratch() (bytes, files int64, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.scratch <= 0 {
		return 0, 0, false
	}
	bytes, files = used(r.scratch)
	return bytes, files, true
}

func (r *Report) setScratch(fd int) {
	r.mu.Lock()
	r.scratch = fd
	r.mu.Unlock()
}
