// Package gitenv says how airlock runs git in a repository it does not
// own, so that no program the repository's config (or a file it
// includes) names ever runs: Keys is every config key whose value is a
// program or makes git run one, with how each is kept from running.
//
// A source's objects are read through a Neutral, a git directory of
// airlock's own pointed at the source's object directory: git reads none
// of the source's config, hooks or promisor settings, and never fetches a
// missing object on its own (git 2.39 has no GIT_NO_LAZY_FETCH; a
// directory with no promisor remote has nothing to fetch from). A
// partial clone's missing blobs are fetched by Neutral.Fetch, from the
// URL its config gives, over git's own transports only.
//
// Git on a target is Command: the repository's effective config is
// listed first (`git config --list`, which runs nothing), and every key
// of Keys, each sub-named one for every name that config uses, is set on
// git's command line (GIT_CONFIG_COUNT, which wins over every file).
// Clean is the environment of all of them: nothing of ours can redirect
// git to another repository or change its config. targets and its
// internal packages start every git through this package.
package gitenv
