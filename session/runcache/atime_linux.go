package runcache

import (
	"io/fs"
	"syscall"
	"time"
)

// usedAt is the later of fi's access and change times: under relatime the
// access time moves at least once a day a file is read, which is as fine as
// eviction needs.
func usedAt(fi fs.FileInfo) time.Time {
	t := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if a := time.Unix(int64(st.Atim.Sec), int64(st.Atim.Nsec)); a.After(t) {
			t = a
		}
	}
	return t
}
