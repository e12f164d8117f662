package worker

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/targets"
)

// Worker is a worker's configuration: the YAML frontmatter of its Markdown
// file, and the body as its instructions.
type Worker struct {
	Name         string
	Description  string
	Author       Person
	Instructions string // the Markdown body

	// The repository of a single-repository worker (the git key): where
	// pushes go by default, further named targets, and what to pull at
	// start. All nil for a multi-repository worker.
	DefaultTarget *TargetSpec
	Targets       map[string]*TargetSpec // further named targets
	AutoPull      []PullSpec
	// Repos are a multi-repository worker's repositories (the repos key),
	// by name; each appears in the workspace under its name. Nil for a
	// single-repository worker.
	Repos []*RepoConfig

	Deny   []string     // added to pathguard.DefaultDenyPatterns
	Limits memfs.Limits // zero fields: defaults

	// Protect lists the branches (patterns, as approval.Rules.Protected)
	// a push to is high risk, whatever the target says of them.
	Protect []string

	File string // where it was read from; "" for the built-in default
	// Digest is the SHA-256 (hex) of the file's content; "" for the
	// default worker. A saved session records it (Binding).
	Digest string

	// Refs are the repositories the worker names (each target, each
	// auto_pull source), in the file's order, with where the file names
	// them: what Check looks at.
	Refs []RepoRef
}

// RepoRef is one place a worker file names a repository: a target, or an
// auto_pull source.
type RepoRef struct {
	Key  string // the dotted key: git.default_target, repos.api.auto_pull[0].source
	Spec *TargetSpec
	// Pull marks an auto_pull source: the branch it pulls must exist.
	Pull bool
	// Where the file says it: the entry, and its type, path and branch
	// (zero where the file does not say them there, as for an auto_pull
	// source that names a target).
	At, TypeAt, PathAt, BranchAt Pos
}

// Pos is a line and a column of a worker file.
type Pos struct{ Line, Column int }

// RepoConfig is one repository of a worker: the keys a single-repository
// worker has under git.
type RepoConfig struct {
	// Name is the repository's name, and the directory it appears under
	// in the workspace; "" for a single-repository worker's, which is the
	// whole workspace.
	Name          string
	DefaultTarget *TargetSpec
	Targets       map[string]*TargetSpec
	AutoPull      []PullSpec
}

// RepoList returns the worker's repositories: its Repos, or the one
// repository of a single-repository worker, named "".
func (w *Worker) RepoList() []*RepoConfig {
	if len(w.Repos) > 0 {
		return w.Repos
	}
	return []*RepoConfig{{DefaultTarget: w.DefaultTarget, Targets: w.Targets, AutoPull: w.AutoPull}}
}

// RepoNames lists a multi-repository worker's repositories; nil for one
// of a single repository.
func (w *Worker) RepoNames() []string {
	var out []string
	for _, r := range w.Repos {
		out = append(out, r.Name)
	}
	return out
}

// Describe says where the worker pushes by default, for the operator.
func (w *Worker) Describe() string {
	if len(w.Repos) == 0 {
		return w.DefaultTarget.String()
	}
	var parts []string
	for _, r := range w.Repos {
		parts = append(parts, r.Name+"/ to "+r.DefaultTarget.String())
	}
	return strings.Join(parts, ", ")
}

// Person is a commit author.
type Person struct {
	Name  string
	Email string
}

// TargetSpec says where a target is.
type TargetSpec struct {
	Type   string // a kind of target (targets.KindNamed): "local", "local-bare", "github"
	Path   string // a local kind's: absolute, resolved against the worker file
	Repo   string // another kind's (github's "owner/repo")
	Branch string // "" means the target's default branch
}

// String is the target as people and error messages name it.
func (t *TargetSpec) String() string {
	s := t.ID()
	if t.Branch != "" {
		s += " (branch " + t.Branch + ")"
	}
	return s
}

// PullSpec is one auto_pull entry.
type PullSpec struct {
	Path   string
	Source *TargetSpec
}

// ConfigError is a mistake in a worker file, with where it is.
type ConfigError struct {
	File         string
	Line, Column int
	Key          string // the dotted key, e.g. git.default_target.type
	Msg          string
}

func (e *ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Default is the worker airlock serve runs without --worker: it
// works on the repository at dir, pushing to its current branch, and
// starts with that branch pulled (lazily: the start costs its trees, not
// its files' content), as a clone would.
func Default(dir string) *Worker {
	abs, _ := filepath.Abs(dir)
	def := &TargetSpec{Type: targets.LocalKind(false).Name, Path: abs}
	return &Worker{
		Name: "default", Description: "A worker on " + abs,
		Author:        Person{Name: "airlock worker", Email: "worker@airlock.invalid"},
		DefaultTarget: def,
		Targets:       map[string]*TargetSpec{},
		AutoPull:      []PullSpec{{Path: ".", Source: def}},
		Refs:          []RepoRef{{Spec: def, Pull: true}},
	}
}

// TargetNames lists the worker's target names, "default" first; for a
// multi-repository worker, as REPO:TARGET.
func (w *Worker) TargetNames() []string {
	if len(w.Repos) == 0 {
		return w.RepoList()[0].TargetNames()
	}
	var out []string
	for _, r := range w.Repos {
		for _, n := range r.TargetNames() {
			out = append(out, r.Name+":"+n)
		}
	}
	return out
}

// TargetNames lists the repository's target names, "default" first.
func (r *RepoConfig) TargetNames() []string {
	names := []string{"default"}
	var rest []string
	for n := range r.Targets {
		rest = append(rest, n)
	}
	sort.Strings(rest)
	return append(names, rest...)
}

func checkBranch(b string) error {
	_, err := targets.BranchRef(b)
	return err
}
