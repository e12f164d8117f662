package targets

import (
	"context"
	"path/filepath"
)

// ExcludeFile is the path of the exclude file of the repository at path (a
// working tree or a bare repository): info/exclude in its common git
// directory, where git keeps the ignore patterns of that repository that
// are not committed, and applies them after every .gitignore. The file
// need not exist.
func ExcludeFile(ctx context.Context, path string) (string, error) {
	common, err := (&Local{path: path}).commonDir(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(common, "info", "exclude"), nil
}
