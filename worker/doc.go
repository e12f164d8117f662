// Package worker owns a worker's configuration: the Markdown file with
// YAML frontmatter that names the worker, its author, its repositories and
// targets, what to pull at start and the sandbox's limits (Parse, Load),
// the default worker airlock serve runs without one (Default), the check
// of the repositories it names against the host as a server starts
// (Worker.Check), and the ids of its targets (TargetSpec.ID,
// Worker.ResolveTargetID).
//
// A worker file is part of airlock's interface: its mistakes come back as
// *ConfigError with the file, line, column and dotted key, and their
// wording is what a worker's author reads. The package knows nothing of a
// running session; the session, the tool surface and the server read a
// *Worker. What each kind of target accepts (a path, a repository name) is
// the targets package's registry of kinds.
package worker
