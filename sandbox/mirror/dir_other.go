//go:build !linux

package mirror

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultDir is in the temporary directory.
func DefaultDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("airlock-%d", os.Getuid()))
}
