package gitdir

import (
	"os"
	"path/filepath"
	"strings"
)

// CommonDir reads the common git directory of the repository at path
// from the files git leaves there (gitrepository-layout(5)); ok is false
// where they are not as expected.
func CommonDir(path string) (string, bool) {
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
