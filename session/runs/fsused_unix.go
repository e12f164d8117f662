//go:build unix

package runs

import "golang.org/x/sys/unix"

// fsUsed is how many bytes and inodes the filesystem holding path uses,
// and whether it could be told: one statfs.
func fsUsed(path string) (held, bool) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return held{}, false
	}
	return held{bytes: int64(st.Blocks-st.Bfree) * int64(st.Bsize), files: int64(st.Files) - int64(st.Ffree)}, true
}
