package targets

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
	if common, ok := commonDirOf(path); ok {
		return filepath.Join(common, "info", "exclude"), nil
	}
	common, err := (&Local{path: path}).commonDir(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(common, "info", "exclude"), nil
}

// commonDirOf reads the common git directory of the repository at path
// from the files git leaves there (gitrepository-layout(5)); ok is false
// where they are not as expected.
func commonDirOf(path string) (string, bool) {
	gitDir := path
	dotgit := filepath.Join(path, ".git")
	if fi, err := os.Stat(dotgit); err == nil && fi.IsDir() {
		gitDir = dotgit
	} else if err == nil && fi.Mode().IsRegular() {
		b, err := os.ReadFile(dotgit)
		target, found := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if err != nil || !found {
			return "", false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(path, target)
		}
		gitDir = target
	} else if _, err := os.Stat(filepath.Join(path, "HEAD")); err != nil {
		return "", false // neither a working tree's top nor a bare repository
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if os.IsNotExist(err) {
		return gitDir, true
	}
	if err != nil {
		return "", false
	}
	common := strings.TrimSpace(string(b))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitDir, common)
	}
	return filepath.Clean(common), true
}
