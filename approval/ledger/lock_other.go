//go:build !unix

package ledger

import "os"

// Without flock, appends are serialised within one process only.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
