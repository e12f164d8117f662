//go:build !unix

package ledger

import "os"

// Without flock, appends are serialised within one process only.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }

// noFollow: the link check before the open (Lstat) is all there is here.
const noFollow = 0
