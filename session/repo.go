package session

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/worker"
)

// repo is one repository of a session: its part of the workspace (the
// whole workspace for a single-repository worker, its directory for a
// multi-repository one), its staging area, and where its base came from.
// Everything but cfg, name, ws and sub is guarded by Session.mu.
type repo struct {
	cfg  *worker.RepoConfig
	name string            // "" for a single-repository session
	ws   staging.Workspace // the area's view of the workspace
	sub  *memfs.Sub        // ws, when the repository is a directory of it
	area *staging.Area

	base    *worker.TargetSpec // where the base was pulled from; nil: nowhere yet
	baseRef string
	excl    excludeFile // where base's exclude file is (ignore.go)
}

// of is the repository's part of a whole-workspace snapshot (a
// checkpoint's), and graft puts such a part back into one.
func (r *repo) of(whole *memfs.Snapshot) *memfs.Snapshot {
	if r.sub == nil {
		return whole
	}
	return r.sub.Of(whole)
}

func (r *repo) graft(whole, part *memfs.Snapshot) (*memfs.Snapshot, error) {
	if r.sub == nil {
		return part, nil
	}
	return r.sub.Graft(whole, part)
}

// path is p, relative to the repository's root, as a workspace path.
func (r *repo) path(p string) string {
	if r.name == "" {
		return p
	}
	if p == "" || p == "." {
		return r.name
	}
	return r.name + "/" + p
}

// label names the repository in messages: "" for the one of a
// single-repository session, else "repository api: ".
func (r *repo) label() string {
	if r.name == "" {
		return ""
	}
	return "repository " + r.name + ": "
}

// wrap prefixes err with the repository's name, so a worker working on
// several knows which one spoke.
func (r *repo) wrap(err error) error {
	if err == nil || r.name == "" {
		return err
	}
	return &RepoError{Repo: r.name, Err: err}
}

// RepoError is an error of one repository of a multi-repository session.
type RepoError struct {
	Repo string
	Err  error
}

func (e *RepoError) Error() string { return "repository " + e.Repo + ": " + e.Err.Error() }
func (e *RepoError) Unwrap() error { return e.Err }

// ErrWhichRepo: a multi-repository session was asked for a git operation
// without saying which repository, and the paths do not say either.
var ErrWhichRepo = errors.New("which repository?")

// Repos lists the session's repository names; nil for a session of one.
func (s *Session) Repos() []string { return s.w.RepoNames() }

// Repo is one repository of a session, for the git tools: status, stage,
// diff, discard, pull and push work per repository, with paths relative
// to its root. A single-repository session has one, named "".
type Repo struct {
	s *Session
	r *repo
}

// Name is the repository's name; "" in a single-repository session.
func (h *Repo) Name() string { return h.r.name }

// Repo finds a repository by name. With name empty, it is the session's
// only repository, or the one every path of paths (workspace paths) is
// under; otherwise ErrWhichRepo, with the names to choose from.
func (s *Session) Repo(name string, paths ...string) (*Repo, error) {
	name = strings.TrimSpace(name)
	if len(s.repos) == 1 && s.repos[0].name == "" {
		if name != "" {
			return nil, fmt.Errorf("this session has one repository, the whole workspace: leave repo out (it was %q)", name)
		}
		return &Repo{s, s.repos[0]}, nil
	}
	if name != "" {
		for _, r := range s.repos {
			if r.name == name {
				return &Repo{s, r}, nil
			}
		}
		return nil, fmt.Errorf("no repository is named %q; the repositories are %s", name, strings.Join(s.Repos(), ", "))
	}
	if len(s.repos) == 1 {
		return &Repo{s, s.repos[0]}, nil
	}
	var found *repo
	for _, p := range paths {
		r := s.repoOf(p)
		if r == nil || found != nil && r != found {
			found = nil
			break
		}
		found = r
	}
	if found != nil {
		return &Repo{s, found}, nil
	}
	return nil, fmt.Errorf("%w this session has the repositories %s: give repo (one of them), or paths under one of their directories",
		ErrWhichRepo, strings.Join(s.Repos(), ", "))
}

// repoOf is the repository whose directory holds the workspace path p;
// nil when none does.
func (s *Session) repoOf(p string) *repo {
	p = strings.TrimPrefix(strings.TrimSpace(p), "/")
	for _, r := range s.repos {
		if r.name == "" || p == r.name || strings.HasPrefix(p, r.name+"/") {
			return r
		}
	}
	return nil
}

// repoNamed is the repository named name; nil when there is none.
func (s *Session) repoNamed(name string) *repo {
	for _, r := range s.repos {
		if r.name == name {
			return r
		}
	}
	return nil
}

// Rel turns workspace paths into paths relative to the repository's root.
// A path outside it is an error that names the repository to use instead.
func (h *Repo) Rel(paths []string) ([]string, error) {
	r := h.r
	if r.name == "" {
		return paths, nil
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		q := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(p), "/"), "/")
		switch {
		case q == r.name || q == ".":
			out = append(out, ".")
		case strings.HasPrefix(q, r.name+"/"):
			out = append(out, strings.TrimPrefix(q, r.name+"/"))
		default:
			if o := h.s.repoOf(q); o != nil {
				return nil, fmt.Errorf("%s is in repository %s, not %s: give repo %q for it, or leave repo out", p, o.name, r.name, o.name)
			}
			return nil, fmt.Errorf("%s is not under %s/, the directory of repository %s: give workspace paths such as %s/src/main.go", p, r.name, r.name, r.name)
		}
	}
	return out, nil
}

// Abs turns a path relative to the repository's root into a workspace
// path.
func (h *Repo) Abs(p string) string { return h.r.path(p) }

// newRepos makes the session's repositories over ws, each with its area.
func newRepos(w *worker.Worker, ws *memfs.Workspace, store *staging.Store, cfg staging.Config) ([]*repo, error) {
	var out []*repo
	for _, rc := range w.RepoList() {
		r := &repo{cfg: rc, name: rc.Name, ws: ws}
		if rc.Name != "" {
			sub, err := ws.Sub(rc.Name)
			if err != nil {
				return nil, fmt.Errorf("repository %s: %w", rc.Name, err)
			}
			r.ws, r.sub = sub, sub
		}
		area, err := staging.New(r.ws, store, cfg)
		if err != nil {
			return nil, err
		}
		area.SetExclude(r.exclude)
		r.area = area
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// RepoWithCommit finds the repository with the staged commit id names (or
// abbreviates); ok is false when none has it, or several might.
func (s *Session) RepoWithCommit(id string) (*Repo, bool) {
	var found *repo
	for _, r := range s.repos {
		if _, err := r.area.Lookup(id); err == nil {
			if found != nil {
				return nil, false
			}
			found = r
		}
	}
	if found == nil {
		return nil, false
	}
	return &Repo{s, found}, true
}

// Outside lists the changes of a multi-repository session's workspace
// outside every repository's directory: no git operation takes them.
func (s *Session) Outside() []memfs.Change {
	if len(s.repos) == 1 && s.repos[0].name == "" {
		return nil
	}
	var out []memfs.Change
	for _, c := range s.ws.Changes() {
		if s.repoOf(c.Path) == nil {
			out = append(out, c)
		}
	}
	return out
}
