package reviewkey

import (
	"os"

	"golang.org/x/sys/unix"
)

// readOnlyMount reports whether f is on a file system mounted read-only
// here (a container's ":ro" bind mount): nobody changes it from this
// side, whoever owns it on the other.
func readOnlyMount(f *os.File) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(int(f.Fd()), &st) == nil && st.Flags&unix.ST_RDONLY != 0
}
