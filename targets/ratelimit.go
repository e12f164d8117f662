package targets

import "github.com/airlock-dev/airlock/targets/internal/httpretry"

// RateLimitedError says GitHub asked for a wait longer than airlock waits
// (see GitHubOptions.MaxWait); the push can be tried again after Wait.
type RateLimitedError = httpretry.RateLimitedError
