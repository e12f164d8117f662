//go:build !linux

package mirror

// openBeneath opens rel (slash-separated; "" is dir itself) below the
// directory dir with flags (O_CREAT's mode perm), following no symlink,
// the last name's included, and no "..". The descriptor is close-on-exec.
func openBeneath(dir int, rel string, flags int, perm uint32) (int, error) {
	return openBeneathWalk(dir, rel, flags, perm)
}
