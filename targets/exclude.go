package targets

import (
	"context"
	"path/filepath"

	"github.com/airlock-dev/airlock/targets/gitdir"
)

// ExcludeFile is the path of the exclude file of the repository at path (a
// working tree's top or a bare repository): info/exclude in its common git
// directory, where git keeps the ignore patterns of that repository that
// are not committed, and applies them after every .gitignore. The file
// need not exist.
//
// It is found from git's own layout (a .git directory, a .git file naming
// the git directory, a commondir file in a linked worktree's), without a
// process; git is asked only where that layout is not found.
func ExcludeFile(ctx context.Context, path string) (string, error) {
	if common, ok := gitdir.CommonDir(path); ok {
		return filepath.Join(common, "info", "exclude"), nil
	}
	common, err := (&Local{path: path}).commonDir(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(common, "info", "exclude"), nil
}
