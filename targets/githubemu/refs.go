package githubemu

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// empty reports whether the repository has no refs at all.
func (s *Server) empty() bool {
	out, err := s.git("-C", s.dir, "for-each-ref", "--count=1")
	return err == nil && out == ""
}

func (s *Server) head(ref string) (plumbing.Hash, bool) {
	out, err := s.git("-C", s.dir, "rev-parse", "--verify", "-q", ref+"^{commit}")
	if err != nil {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(out), true
}

func (s *Server) refBody(ref string, h plumbing.Hash) map[string]any {
	return map[string]any{
		"ref": ref, "node_id": "REF_" + h.String()[:8],
		"url":    s.URL + "repos/" + s.owner + "/" + s.repo + "/git/" + ref,
		"object": map[string]any{"type": "commit", "sha": h.String()},
	}
}

func (s *Server) getRepo(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	def := "main"
	if out, err := s.git("-C", s.dir, "symbolic-ref", "--short", "HEAD"); err == nil {
		def = out
	}
	return http.StatusOK, map[string]any{
		"name": s.repo, "full_name": s.owner + "/" + s.repo, "default_branch": def,
		"owner": map[string]any{"login": s.owner}, "private": true,
	}, nil
}

func (s *Server) getRef(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	ref := "refs/" + r.PathValue("ref")
	h, ok := s.head(ref)
	if !ok {
		return 0, nil, fail(http.StatusNotFound, "Not Found")
	}
	return http.StatusOK, s.refBody(ref, h), nil
}

func decode(r *http.Request, v any) *apiError {
	dec := json.NewDecoder(io.LimitReader(r.Body, 200<<20))
	if err := dec.Decode(v); err != nil {
		return fail(http.StatusBadRequest, "Problems parsing JSON: %v", err)
	}
	return nil
}

func validRef(ref string) bool {
	return strings.HasPrefix(ref, "refs/") && strings.Count(ref, "/") >= 2 &&
		exec.Command("git", "check-ref-format", ref).Run() == nil
}

func (s *Server) isCommit(st *filesystem.Storage, sha string) bool {
	_, err := object.GetCommit(st, plumbing.NewHash(sha))
	return len(sha) == 40 && err == nil
}

func (s *Server) createRef(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	var in struct{ Ref, SHA string }
	if e := decode(r, &in); e != nil {
		return 0, nil, e
	}
	if !validRef(in.Ref) {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Reference name is invalid")
	}
	if !s.isCommit(st, in.SHA) {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Object does not exist")
	}
	if _, ok := s.head(in.Ref); ok {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Reference already exists")
	}
	if _, err := s.git("-C", s.dir, "update-ref", in.Ref, in.SHA, plumbing.ZeroHash.String()); err != nil {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Reference already exists")
	}
	return http.StatusCreated, s.refBody(in.Ref, plumbing.NewHash(in.SHA)), nil
}

func (s *Server) updateRef(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	ref := "refs/" + r.PathValue("ref")
	var in struct {
		SHA   string
		Force bool
	}
	if e := decode(r, &in); e != nil {
		return 0, nil, e
	}
	cur, ok := s.head(ref)
	if !ok {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Reference does not exist")
	}
	if !s.isCommit(st, in.SHA) {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Object does not exist")
	}
	if !in.Force && cur.String() != in.SHA {
		if _, err := s.git("-C", s.dir, "merge-base", "--is-ancestor", cur.String(), in.SHA); err != nil {
			return 0, nil, fail(http.StatusUnprocessableEntity, "Update is not a fast forward")
		}
	}
	if _, err := s.git("-C", s.dir, "update-ref", ref, in.SHA, cur.String()); err != nil {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Update is not a fast forward")
	}
	return http.StatusOK, s.refBody(ref, plumbing.NewHash(in.SHA)), nil
}

func (s *Server) deleteRef(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	ref := "refs/" + r.PathValue("ref")
	if _, ok := s.head(ref); !ok {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Reference does not exist")
	}
	if _, err := s.git("-C", s.dir, "update-ref", "-d", ref); err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	return http.StatusNoContent, nil, nil
}

// Protect turns on branch protection for branch, as a repository's admin
// does in its settings: GET branches/{branch} says "protected".
func (s *Server) Protect(branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.protected == nil {
		s.protected = map[string]bool{}
	}
	s.protected[branch] = true
}

func (s *Server) getBranch(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	name := r.PathValue("branch")
	h, ok := s.head("refs/heads/" + name)
	if !ok {
		return 0, nil, fail(http.StatusNotFound, "Branch not found")
	}
	return http.StatusOK, map[string]any{"name": name, "commit": map[string]any{"sha": h.String()}, "protected": s.protected[name]}, nil
}
