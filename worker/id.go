package worker

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// ID is the id the target of t has (what grants and auto-approval name):
// "local:/abs/path", "local-bare:/abs/path", "github:owner/repo".
func (t *TargetSpec) ID() string {
	if t.Type == "github" {
		return "github:" + t.Repo
	}
	return t.Type + ":" + t.Path
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
		if kind, _, _ := strings.Cut(s, ":"); kind != "local" && kind != "local-bare" && kind != "github" {
			return "", fmt.Errorf("%q names no repository's target: this worker has the repositories %s, so name a target as REPO:TARGET (such as %s:default), or give an id such as local:/path/to/repo",
				s, strings.Join(w.RepoNames(), ", "), w.Repos[0].Name)
		}
	} else if spec, ok := repos[0].Resolve(s); ok {
		return spec.ID(), nil
	}
	kind, rest, ok := strings.Cut(s, ":")
	var id string
	switch {
	case !ok:
		return "", fmt.Errorf("no target is named %q; name one of %s, or give an id such as local:/path/to/repo", s, strings.Join(w.TargetNames(), ", "))
	case kind == "github" && repoRe.MatchString(rest):
		id = s
	case (kind == "local" || kind == "local-bare") && filepath.IsAbs(rest):
		id = kind + ":" + filepath.Clean(rest)
	default:
		return "", fmt.Errorf("%q is not a target id: use local:/abs/path, local-bare:/abs/path or github:owner/repo", s)
	}
	// An id must be one of the worker's targets, or approving it would
	// silently approve nothing. Paths compare after symlinks are resolved,
	// and the id returned is the one the target itself reports.
	var ids []string
	for _, r := range repos {
		for _, spec := range append([]*TargetSpec{r.DefaultTarget}, mapValues(r.Targets)...) {
			tid := spec.ID()
			ids = append(ids, tid)
			if sameTargetID(tid, id) {
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

// sameTargetID compares ids, local paths by where their symlinks lead.
func sameTargetID(a, b string) bool {
	if a == b {
		return true
	}
	ka, pa, _ := strings.Cut(a, ":")
	kb, pb, _ := strings.Cut(b, ":")
	if ka != kb || ka == "github" {
		return false
	}
	ra, err1 := filepath.EvalSymlinks(pa)
	rb, err2 := filepath.EvalSymlinks(pb)
	return err1 == nil && err2 == nil && ra == rb
}
