package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SensitiveHome lists, relative to a home directory, where credentials
// usually live. A read-only path the operator adds may be none of these,
// hold none of them, and not be the home itself, unless the operator says
// --allow-sensitive-roots.
var SensitiveHome = []string{
	".ssh", ".aws", ".gnupg", ".kube", ".config/gcloud", ".config/gh", ".docker",
	".npmrc", ".pypirc", ".netrc", ".git-credentials",
}

// ErrSensitive: a read-only path would show a run secrets.
var ErrSensitive = errors.New("a sensitive path")

// CheckReadOnly resolves p (symlinks included) and refuses it when it is,
// holds, or lies inside one of the sensitive roots of home, when it is
// home or holds it, or when it holds or lies inside one of also (airlock's
// own state and socket directories). It returns the resolved path.
func CheckReadOnly(p, home string, also ...string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("read-only path %s: %w", p, err)
	}
	if _, err := os.Stat(real); err != nil {
		return "", err
	}
	within := func(a, b string) bool { // a is b or inside it
		rel, err := filepath.Rel(b, a)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	if home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
		if within(home, real) {
			return "", fmt.Errorf("read-only path %s: %w: it holds the home directory %s and the credentials in it; name a directory inside it instead (such as ~/go/pkg/mod)", p, ErrSensitive, home)
		}
		for _, s := range SensitiveHome {
			sp := filepath.Join(home, s)
			if within(real, sp) || within(sp, real) {
				return "", fmt.Errorf("read-only path %s: %w: %s holds credentials; add --allow-sensitive-roots if a run must see it", p, ErrSensitive, sp)
			}
		}
	}
	for _, a := range also {
		if a == "" {
			continue
		}
		if within(real, a) || within(a, real) {
			return "", fmt.Errorf("read-only path %s: %w: it reaches airlock's own state (%s)", p, ErrSensitive, a)
		}
	}
	return real, nil
}
