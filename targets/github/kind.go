package github

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// The github kind joins the registry when this package is linked in:
// targets cannot import it (see targets.Register).
func init() { targets.Register(kind) }

var kind = &targets.Kind{
	Name: "github", Group: "github",
	Takes: "repo: owner/name", Missing: "missing; give the repository as owner/name",
	Example: "owner/repo", Placeholder: "OWNER/REPO",
	Check: func(name string) error {
		if !githubName.MatchString(name) {
			return fmt.Errorf("%q is not a GitHub repository; write it as owner/name", name)
		}
		return nil
	},
	Open: func(ctx context.Context, name string, env targets.Env) (targets.Target, error) {
		g, err := Open(ctx, name, env.GitHub)
		if err != nil {
			return nil, err
		}
		return g, nil
	},
	OpenSource: func(ctx context.Context, key, name string, env targets.Env) (staging.BlobSource, error) {
		g, err := Open(ctx, name, env.GitHub)
		if err != nil {
			return nil, fmt.Errorf("no blob source for %q: %w", key, err)
		}
		// A source opened anew knows no sizes: the files that need
		// them were seeded with theirs, and journaled with them.
		return g.source(), nil
	},
	OpenLedger: func(ctx context.Context, name string, env targets.Env) (targets.LedgerHeadReader, error) {
		return Open(ctx, name, env.GitHub)
	},
}
