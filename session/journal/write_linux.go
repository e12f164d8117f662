package journal

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeSegs writes segs, in order, at off of f, with as few pwritev(2) as
// the kernel's limit on vectors takes, and returns how much it wrote.
func writeSegs(f *os.File, segs [][]byte, off int64) (int, error) {
	total := 0
	for len(segs) > 0 {
		part := segs[:min(len(segs), 1024)] // IOV_MAX
		n, err := unix.Pwritev(int(f.Fd()), part, off)
		total += n
		off += int64(n)
		if err != nil {
			return total, err
		}
		// A short write leaves the rest of part to write again.
		for n > 0 && len(segs) > 0 {
			if n >= len(segs[0]) {
				n -= len(segs[0])
				segs = segs[1:]
				continue
			}
			segs[0] = segs[0][n:]
			n = 0
		}
	}
	return total, nil
}
