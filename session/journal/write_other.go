//go:build !linux

package journal

import "os"

// writeSegs writes segs, in order, at off of f, joined into one write.
func writeSegs(f *os.File, segs [][]byte, off int64) (int, error) {
	var all []byte
	for _, s := range segs {
		all = append(all, s...)
	}
	return f.WriteAt(all, off)
}
