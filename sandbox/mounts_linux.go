package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// A root server's jail acts as nobody on the host, and its helper cannot
// walk to a path under a directory only root may enter (/root is 0700):
// the worker's cache in airlock's state directory, a --run-ro path such as
// ~/go/pkg/mod. So the server, which can, clones those paths' mounts
// (open_tree(2)), and hands the detached mounts to the helper over a Unix
// socket; the helper attaches them in its own mount namespace
// (move_mount(2)). Only the named directory becomes reachable; what is in
// it the jail's user reads with its own permissions. A server running as
// the jail's user binds by path, which that user can walk.

// mountsFD is the helper's end of the socket the detached mounts come on.
const mountsFD = 6

// detachedPaths are the host paths a spec binds, in the order their
// detached mounts are sent: the cache, then the read-only paths.
func detachedPaths(spec Spec) []string {
	var ps []string
	if spec.Cache != "" {
		ps = append(ps, spec.Cache)
	}
	return append(ps, spec.ReadOnly...)
}

// detach clones the mounts of spec's paths when this server's jails run as
// another user; nil when they run as this one.
func detach(spec Spec) ([]int, error) {
	if uid, _ := HostUser(); uid == os.Getuid() {
		return nil, nil
	}
	var fds []int
	for _, p := range detachedPaths(spec) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("%w: cloning the mount of %s for the jail: %v", ErrSetup, p, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// sendMounts hands fds (possibly none) to the helper: one byte, with them.
func sendMounts(sock *os.File, fds []int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return unix.Sendmsg(int(sock.Fd()), []byte{0}, oob, nil, 0)
}

// receiveMounts is the helper's side of sendMounts: none, or one detached
// mount for each of spec's paths.
func receiveMounts(spec Spec) ([]int, error) {
	n := len(detachedPaths(spec))
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*max(n, 1)))
	_, oobn, _, _, err := unix.Recvmsg(mountsFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receiving the run's mounts: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("receiving the run's mounts: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		rights, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, fmt.Errorf("receiving the run's mounts: %w", err)
		}
		fds = append(fds, rights...)
	}
	if len(fds) != 0 && len(fds) != n {
		return nil, fmt.Errorf("received %d mounts for %d paths", len(fds), n)
	}
	return fds, nil
}

// attach puts the detached mount fd at dst (made to match: a directory or
// a file), private to this namespace, read-only when ro.
func attach(fd int, dst string, ro bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := mountPoint(dst, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching %s: %w", dst, err)
	}
	if err := unix.Mount("", dst, "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making %s private: %w", dst, err)
	}
	return restrict(dst, ro)
}

// bindPath binds host path p at dst, read-only when ro.
func bindPath(p, dst string, ro bool) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if err := mountPoint(dst, fi.IsDir()); err != nil {
		return err
	}
	if err := unix.Mount(p, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding %s: %w", p, err)
	}
	return restrict(dst, ro)
}

// mountPoint makes dst, a directory or an empty file.
func mountPoint(dst string, dir bool) error {
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, nil, 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// restrict remounts the bind mount at dst nosuid and nodev, and read-only
// when ro: a bind mount takes these flags only on a remount, which must
// keep those the host locked on it (noexec).
func restrict(dst string, ro bool) error {
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_NOSUID | unix.MS_NODEV)
	if ro {
		flags |= unix.MS_RDONLY
	}
	var st unix.Statfs_t
	if unix.Statfs(dst, &st) == nil && st.Flags&unix.ST_NOEXEC != 0 {
		flags |= unix.MS_NOEXEC
	}
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("remounting %s: %w", dst, err)
	}
	return nil
}

// resolverFiles are what of the host's /etc a run with the network needs
// to resolve names; its resolv.conf is its own (netjail_linux.go's
// resolvConf): the server's relay to the host's resolver.
var resolverFiles = []string{"nsswitch.conf", "hosts", "gai.conf"}

// bindResolver shows a run with the network the host's resolver
// configuration, read-only: each file's content, wherever its symlink
// leads (resolv.conf is often one, into /run/systemd/resolve). A file the
// host lacks stays absent.
func bindResolver(root string) error {
	for _, f := range resolverFiles {
		src, err := filepath.EvalSymlinks("/etc/" + f)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(src); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := bindPath(src, filepath.Join(root, "etc", f), true); err != nil {
			return err
		}
	}
	return nil
}

// ownResolver is a run's name service without the network: its own host
// names, from files only, so that a lookup fails at once.
var ownResolver = map[string]string{
	"etc/hosts":         "127.0.0.1 localhost airlock\n::1 localhost airlock\n",
	"etc/nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n",
}

// CheckReachable refuses a read-only path that a root server's commands,
// which act as nobody, could not read even once bound: a directory they
// may not list and enter, or a file they may not read. A server running
// as its commands' user is not checked: they read what it reads.
func CheckReachable(p string) error {
	uid, gid := HostUser()
	if uid == os.Getuid() {
		return nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	need := fs.FileMode(0o4)
	if fi.IsDir() {
		need = 0o5
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == uid:
		perm >>= 6
	case int(st.Gid) == gid:
		perm >>= 3
	}
	if perm&need == need {
		return nil
	}
	return fmt.Errorf("%w: airlock runs as root, so commands act as nobody (uid %d), and %s (mode %v, owner uid %d) is not open to them; "+
		"make it readable by others (chmod o+rX %s), or run airlock serve as a user who can read it", ErrUnreachable, uid, p, fi.Mode().Perm(), st.Uid, p)
}
