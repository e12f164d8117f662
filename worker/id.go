package worker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/targets"
)

// ID is the id the target of t has (what grants and auto-approval name):
// "local:/abs/path", "local-bare:/abs/path", "github:owner/repo".
func (t *TargetSpec) ID() string { return t.Type + ":" + t.Where() }

// Where is where the target is: its path for a kind of local repository,
// else its repository's name.
func (t *TargetSpec) Where() string {
	if t.Local() {
		return t.Path
	}
	return t.Repo
}

// Kind is the target's kind; nil for a type no kind has (only a spec not
// read from a worker file can have one).
func (t *TargetSpec) Kind() *targets.Kind { return targets.KindNamed(t.Type) }

// Local reports whether the target is a repository on this host.
func (t *TargetSpec) Local() bool {
	k := t.Kind()
	return k != nil && k.Local
}

// ResolveTargetID turns what an operator wrote (a target name of the
// worker, or a target id) into a target id. A multi-repository worker's
// targets are named REPO:TARGET (api:default, web:staging).
func (w *Worker) ResolveTargetID(s string) (string, error) {
	repos := w.RepoList()
	if len(w.Repos) > 0 {
		name, target, _ := strings.Cut(s, ":")
		for _, r := range w.Repos {
			if r.Name == name {
				if target == "" {
					target = "default"
				}
				if spec, ok := r.Resolve(target); ok {
					return spec.ID(), nil
				}
				return "", fmt.Errorf("repository %s has no target named %q; name one of %s as %s:NAME", name, target, strings.Join(r.TargetNames(), ", "), name)
			}
		}
		if kind, _, _ := strings.Cut(s, ":"); targets.KindNamed(kind) == nil {
			return "", fmt.Errorf("%q names no repository's target: this worker has the repositories %s, so name a target as REPO:TARGET (such as %s:default), or give an id such as local:/path/to/repo",
				s, strings.Join(w.RepoNames(), ", "), w.Repos[0].Name)
		}
	} else if spec, ok := repos[0].Resolve(s); ok {
		return spec.ID(), nil
	}
	if !strings.Contains(s, ":") {
		return "", fmt.Errorf("no target is named %q; name one of %s, or give an id such as local:/path/to/repo", s, strings.Join(w.TargetNames(), ", "))
	}
	id, err := targets.ParseID(s)
	if err != nil {
		return "", err
	}
	// An id must be one of the worker's targets, or approving it would
	// silently approve nothing. Paths compare after symlinks are resolved,
	// and the id returned is the one the target itself reports.
	var ids []string
	for _, r := range repos {
		for _, spec := range append([]*TargetSpec{r.DefaultTarget}, mapValues(r.Targets)...) {
			tid := spec.ID()
			ids = append(ids, tid)
			if targets.SameID(tid, id) {
				return tid, nil
			}
		}
	}
	sort.Strings(ids)
	return "", fmt.Errorf("%s is none of this worker's targets (%s; ids %s): it would approve nothing; name one of them",
		s, strings.Join(w.TargetNames(), ", "), strings.Join(ids, ", "))
}

// Resolve finds a target of r by its name in the worker file ("default":
// the default target).
func (r *RepoConfig) Resolve(name string) (*TargetSpec, bool) {
	if name == "default" {
		return r.DefaultTarget, true
	}
	spec, ok := r.Targets[name]
	return spec, ok
}

func mapValues(m map[string]*TargetSpec) []*TargetSpec {
	var out []*TargetSpec
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
