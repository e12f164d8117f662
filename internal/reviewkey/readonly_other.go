//go:build !linux

package reviewkey

import "os"

// readOnlyMount: see readonly_linux.go; elsewhere no file is taken as
// read-only, so another user's file of keys is refused.
func readOnlyMount(*os.File) bool { return false }
