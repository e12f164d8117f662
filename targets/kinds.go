package targets

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/gitread"
)

// kinds are the kinds of target, in the order messages list them: the
// local ones, then those registered (Register).
var kinds = []*Kind{
	localKind(false),
	localKind(true),
}

// Register adds a kind defined in a package of its own (targets/github's,
// from its init, as database/sql's drivers register): targets cannot
// import it. Every program that parses worker files or opens targets
// imports the kinds it knows (package worker imports targets/github), so
// that none is silently missing. It panics on a name already registered.
func Register(k *Kind) {
	if KindNamed(k.Name) != nil {
		panic("targets: kind " + k.Name + " registered twice")
	}
	kinds = append(kinds, k)
}

// localKind is the kind of a local repository: a working tree's, or
// (bare) a bare one's.
func localKind(bare bool) *Kind {
	name := "local"
	if bare {
		name = "local-bare"
	}
	return &Kind{
		Name: name, Local: true, Bare: bare, Group: "local",
		Takes: "path", Missing: "missing; give the repository's path, e.g. path: .",
		Example: "/abs/path", Placeholder: "PATH",
		Open: func(ctx context.Context, path string, _ Env) (Target, error) {
			return openLocal(ctx, path, bare)
		},
		OpenSource: func(ctx context.Context, key, path string, _ Env) (staging.BlobSource, error) {
			if !filepath.IsAbs(path) {
				return nil, fmt.Errorf("no blob source for %q: the path is not absolute", key)
			}
			l := &Local{path: path, bare: bare}
			common, err := l.commonDir(ctx)
			if err != nil {
				return nil, fmt.Errorf("the repository %s the base was pulled from: %w", l.path, err)
			}
			return gitread.NewSource(common), nil
		},
		OpenLedger: func(_ context.Context, path string, _ Env) (LedgerHeadReader, error) {
			abs, err := filepath.Abs(path)
			if err != nil {
				return nil, err
			}
			l := &Local{path: abs, bare: bare}
			if _, err := l.open(); err != nil {
				return nil, fmt.Errorf("%s: %w", name+":"+path, err)
			}
			return l, nil
		},
	}
}
