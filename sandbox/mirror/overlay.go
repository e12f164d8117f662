package mirror

import "golang.org/x/sys/unix"

// overlayfs records what a run did in its upper layer with two marks,
// read back both from the workspace's upper layer (Changes) and from
// ~/.cache's (MergeLayer): one definition, so that the two cannot
// disagree on what a run removed.

// opaqueXattr marks a directory of the upper layer that replaced what the
// lower one had there (userxattr mounts: the "user." name).
const opaqueXattr = "user.overlay.opaque"

// isWhiteout reports whether a file of mode and device rdev (as stat(2)
// gives them) is an overlay whiteout: a character device 0:0, which
// says the run removed the path. Any other device is something the run
// made (where it could), not a removal.
func isWhiteout(mode uint32, rdev uint64) bool {
	return mode&unix.S_IFMT == unix.S_IFCHR && rdev == 0
}

// isOpaqueMark reports whether the value of opaqueXattr (n bytes of buf
// read, or err) marks the directory opaque: "y". (Newer kernels also write
// "x", for a directory holding whiteouts of the other kind, which does not
// replace what is below it.)
func isOpaqueMark(buf []byte, n int, err error) bool {
	return err == nil && n > 0 && buf[0] == 'y'
}

// isOpaqueFD reports whether the directory open at fd is marked opaque.
func isOpaqueFD(fd int) bool {
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(fd, opaqueXattr, buf)
	return isOpaqueMark(buf, n, err)
}
