package targets

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/gitread"
)

// OpenSource opens the blob source a target's Fetch added to a store
// under key (the target's ID), for a session resumed in another process:
// its lazy files read their content from the same repository (a local
// one's packs, or GitHub's github.com, with a token found as OpenGitHub
// finds one). OpenSourceWith says where GitHub is.
func OpenSource(ctx context.Context, key string) (staging.BlobSource, error) {
	return OpenSourceWith(ctx, key, GitHubOptions{})
}

// OpenSourceWith is OpenSource, with gh for a GitHub key, as a GitHub
// target would be opened.
func OpenSourceWith(ctx context.Context, key string, gh GitHubOptions) (staging.BlobSource, error) {
	var l *Local
	switch {
	case strings.HasPrefix(key, "github:"):
		g, err := OpenGitHub(ctx, key, gh)
		if err != nil {
			return nil, fmt.Errorf("no blob source for %q: %w", key, err)
		}
		// A source opened anew knows no sizes: the files that need
		// them were seeded with theirs, and journaled with them.
		return g.source(), nil
	case strings.HasPrefix(key, "local-bare:"):
		l = &Local{path: strings.TrimPrefix(key, "local-bare:"), bare: true}
	case strings.HasPrefix(key, "local:"):
		l = &Local{path: strings.TrimPrefix(key, "local:")}
	default:
		return nil, fmt.Errorf("no blob source for %q: not a local repository nor one on GitHub", key)
	}
	if !filepath.IsAbs(l.path) {
		return nil, fmt.Errorf("no blob source for %q: the path is not absolute", key)
	}
	common, err := l.commonDir(ctx)
	if err != nil {
		return nil, fmt.Errorf("the repository %s the base was pulled from: %w", l.path, err)
	}
	return gitread.NewSource(common), nil
}
