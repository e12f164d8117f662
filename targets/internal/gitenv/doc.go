// Package gitenv says how airlock runs git in a repository it does not
// own: an environment that no GIT_DIR or config variable of ours can
// redirect (Clean), and the settings every such git has (Checks: git's
// object checks on what it receives, no fsmonitor command a repository's
// config could name). targets and its internal packages start every git
// with them.
package gitenv
