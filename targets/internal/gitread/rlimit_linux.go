package gitread

import "golang.org/x/sys/unix"

// limitData sets the soft RLIMIT_DATA of process pid (its heap, not the
// files it maps read-only, such as git's packs) to n bytes, or its hard
// limit if that is lower. Only the soft limit is set: git does not raise
// its own, and the repository it reads cannot make it.
func limitData(pid int, n uint64) bool {
	var cur unix.Rlimit
	if unix.Prlimit(pid, unix.RLIMIT_DATA, nil, &cur) != nil {
		return false
	}
	lim := unix.Rlimit{Cur: min(n, cur.Max), Max: cur.Max}
	return unix.Prlimit(pid, unix.RLIMIT_DATA, &lim, nil) == nil
}
