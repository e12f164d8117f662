package targets

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/gitread"
)

// kinds are the kinds of target, in the order messages list them.
var kinds = []*Kind{
	localKind(false),
	localKind(true),
	{
		Name: "github", Group: "github",
		Takes: "repo: owner/name", Missing: "missing; give the repository as owner/name",
		Example: "owner/repo", Placeholder: "OWNER/REPO",
		Check: func(name string) error {
			if !githubName.MatchString(name) {
				return fmt.Errorf("%q is not a GitHub repository; write it as owner/name", name)
			}
			return nil
		},
		Open: func(ctx context.Context, name string, env Env) (Target, error) {
			g, err := OpenGitHub(ctx, name, env.GitHub)
			if err != nil {
				return nil, err
			}
			return g, nil
		},
		OpenSource: func(ctx context.Context, key, name string, env Env) (staging.BlobSource, error) {
			g, err := OpenGitHub(ctx, name, env.GitHub)
			if err != nil {
				return nil, fmt.Errorf("no blob source for %q: %w", key, err)
			}
			// A source opened anew knows no sizes: the files that need
			// them were seeded with theirs, and journaled with them.
			return g.source(), nil
		},
		OpenLedger: func(ctx context.Context, name string, env Env) (LedgerHeadReader, error) {
			return OpenGitHub(ctx, name, env.GitHub)
		},
	},
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
