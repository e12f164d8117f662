//go:build unix

package session

import "golang.org/x/sys/unix"

// fsUsed is how many bytes the filesystem holding path uses, and whether
// it could be told.
func fsUsed(path string) (int64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return 0, false
	}
	return int64(st.Blocks-st.Bfree) * int64(st.Bsize), true
}
