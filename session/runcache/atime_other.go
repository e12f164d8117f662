//go:build !linux

package runcache

import (
	"io/fs"
	"time"
)

// usedAt is fi's change time where airlock does not read access times.
func usedAt(fi fs.FileInfo) time.Time { return fi.ModTime() }
