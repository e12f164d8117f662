package mirror

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultDir is where mirrors go unless the operator says otherwise: a
// per-user directory on /dev/shm (memory), else in the temporary
// directory.
func DefaultDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return filepath.Join("/dev/shm", fmt.Sprintf("airlock-%d", os.Getuid()))
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("airlock-%d", os.Getuid()))
}
