package githubemu

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Server is one emulated repository.
type Server struct {
	// URL is the REST API's base, for GitHubOptions.APIURL.
	URL string
	// GitURL is the base repositories are served under, for
	// GitHubOptions.GitURL.
	GitURL string

	owner, repo, token string
	dir                string
	srv                *httptest.Server

	mu     sync.Mutex // one API request at a time touches the repository
	faults []*Fault
	calls  map[string]int
	pulls  []PullRequest
	// gitBytes is what smart HTTP answered, in bytes of body.
	gitBytes int64
	// treeLimit truncates listings of trees past so many entries, as
	// GitHub does past 100,000; 0 is no limit.
	treeLimit int
}

// Fault is an answer GitHub sometimes gives instead of the right one.
type Fault struct {
	// Method and Path select requests: Path is matched as a suffix of the
	// URL path with the repository prefix removed ("/git/commits",
	// "/git/refs/heads/main"); empty matches any.
	Method, Path string
	// Status, when set, is answered instead of handling the request.
	Status int
	// RetryAfter is sent as the Retry-After header.
	RetryAfter string
	// Message is the JSON message; a sensible default otherwise.
	Message string
	// Drop handles the request fully, then closes the connection without
	// answering: the work is done, the client never hears of it.
	Drop bool
	// Times is how many matching requests get the fault (0 means 1).
	Times int
	// Before, when set, runs before the request is handled: someone else
	// acting at that moment (pushing to the branch, say).
	Before func()
}

// PullRequest is one pull request opened on the emulator.
type PullRequest struct {
	Number           int
	Title, Body      string
	Head, Base       string
	HTMLURL, HeadSHA string
}

// New starts an emulator for OWNER/REPO, accepting token only, with a new
// empty bare repository under dir (dir/OWNER/REPO.git) whose default
// branch is main.
func New(dir, owner, repo, token string) (*Server, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("githubemu needs git: %w", err)
	}
	root := filepath.Join(dir, "repos")
	bare := filepath.Join(root, owner, repo+".git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		return nil, err
	}
	s := &Server{owner: owner, repo: repo, token: token, dir: bare, calls: map[string]int{}}
	if _, err := s.git("init", "-q", "--bare", "-b", "main", bare); err != nil {
		return nil, err
	}
	// Nothing repacks behind the emulator's back. GitHub serves partial
	// fetches (filter blob:none) and wants of any object it has: the
	// GitHub target pulls trees only and fetches blobs by id later.
	for _, kv := range [][2]string{{"gc.auto", "0"}, {"uploadpack.allowFilter", "true"}, {"uploadpack.allowAnySHA1InWant", "true"}} {
		if _, err := s.git("-C", bare, "config", kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	p := "/api/repos/{owner}/{repo}"
	mux.HandleFunc("GET "+p, s.api(s.getRepo))
	mux.HandleFunc("GET "+p+"/git/ref/{ref...}", s.api(s.getRef))
	mux.HandleFunc("POST "+p+"/git/refs", s.api(s.createRef))
	mux.HandleFunc("PATCH "+p+"/git/refs/{ref...}", s.api(s.updateRef))
	mux.HandleFunc("POST "+p+"/git/blobs", s.api(s.createBlob))
	mux.HandleFunc("POST "+p+"/git/trees", s.api(s.createTree))
	mux.HandleFunc("POST "+p+"/git/commits", s.api(s.createCommit))
	mux.HandleFunc("GET "+p+"/git/commits/{sha}", s.api(s.getCommit))
	mux.HandleFunc("DELETE "+p+"/git/refs/{ref...}", s.api(s.deleteRef))
	mux.HandleFunc("GET "+p+"/git/trees/{sha}", s.api(s.getTree))
	mux.HandleFunc("GET "+p+"/git/blobs/{sha}", s.api(s.getBlob))
	mux.HandleFunc("POST "+p+"/pulls", s.api(s.createPull))
	backend := &cgi.Handler{
		Path: git, Args: []string{"http-backend"}, Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	mux.Handle("/git/", s.gitAuth(backend))
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/api/"
	s.GitURL = s.srv.URL + "/git/"
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Dir is the bare repository behind the emulator.
func (s *Server) Dir() string { return s.dir }

// Inject adds a fault; faults are used in the order injected.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Times == 0 {
		f.Times = 1
	}
	s.faults = append(s.faults, &f)
}

// Calls is how many requests reached "METHOD /suffix" (the path with the
// repository prefix removed, as in Fault.Path), faults included. Git's
// smart HTTP counts under the path after OWNER/REPO.git: "GET /info/refs",
// "POST /git-upload-pack".
func (s *Server) Calls(method, suffix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method+" "+suffix]
}

// CallsUnder is how many requests reached "METHOD /prefix..." (as in
// Calls): "GET", "/git/trees/" counts every listing of a tree.
func (s *Server) CallsUnder(method, prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.calls {
		if strings.HasPrefix(k, method+" "+prefix) {
			n += c
		}
	}
	return n
}

// SetTreeLimit makes listings of trees (GET /git/trees/SHA) longer than n
// entries come back truncated, as GitHub's do past 100,000 entries or
// 7 MB; 0 lists everything.
func (s *Server) SetTreeLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.treeLimit = n
}

// GitBytes is how many bytes of body smart HTTP answered so far.
func (s *Server) GitBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gitBytes
}

// PullRequests are the pull requests opened so far.
func (s *Server) PullRequests() []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PullRequest(nil), s.pulls...)
}

func (s *Server) git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// apiError is GitHub's error body.
type apiError struct {
	status  int
	message string
}

func fail(status int, format string, args ...any) *apiError {
	return &apiError{status, fmt.Sprintf(format, args...)}
}

type handler func(r *http.Request, st *filesystem.Storage) (int, any, *apiError)

// api wraps an endpoint: authentication, the repository's name, faults,
// the empty-repository rule, JSON in and out.
func (s *Server) api(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); auth != "Bearer "+s.token && auth != "token "+s.token {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
			return
		}
		if r.PathValue("owner") != s.owner || r.PathValue("repo") != s.repo {
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
			return
		}
		suffix := strings.TrimPrefix(r.URL.EscapedPath(), "/api/repos/"+s.owner+"/"+s.repo)
		s.mu.Lock()
		s.calls[r.Method+" "+suffix]++
		f := s.fault(r.Method, suffix)
		s.mu.Unlock()
		if f != nil && f.Before != nil {
			f.Before()
		}
		if f != nil && f.Status != 0 {
			writeFault(w, f)
			return
		}
		s.mu.Lock()
		st := filesystem.NewStorage(osfs.New(s.dir), cache.NewObjectLRUDefault())
		var status int
		var body any
		var aerr *apiError
		if strings.HasPrefix(suffix, "/git/") && s.empty() {
			aerr = fail(http.StatusConflict, "Git Repository is empty.")
		} else {
			status, body, aerr = h(r, st)
		}
		s.mu.Unlock()
		if f != nil && f.Drop {
			drop(w)
			return
		}
		if aerr != nil {
			writeJSON(w, aerr.status, map[string]string{"message": aerr.message, "documentation_url": "https://docs.github.com/rest"})
			return
		}
		if raw, ok := body.(rawBody); ok {
			w.Header().Set("Content-Type", "application/vnd.github.raw")
			w.WriteHeader(status)
			w.Write(raw)
			return
		}
		writeJSON(w, status, body)
	}
}

// fault takes the next fault for a request; s.mu is held.
func (s *Server) fault(method, suffix string) *Fault {
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == method) && strings.HasSuffix(suffix, f.Path) {
			f.Times--
			if f.Times <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			return f
		}
	}
	return nil
}

func writeFault(w http.ResponseWriter, f *Fault) {
	msg := f.Message
	switch {
	case msg != "":
	case f.Status == http.StatusForbidden || f.Status == http.StatusTooManyRequests:
		msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
	case f.Status == http.StatusUnprocessableEntity:
		msg = "Update is not a fast forward"
	case f.Status == http.StatusConflict:
		msg = "Git Repository is empty."
	default:
		msg = http.StatusText(f.Status)
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	writeJSON(w, f.Status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if v == nil {
		return
	}
	json.NewEncoder(w).Encode(v)
}

// gitAuth lets git's smart HTTP through with the token as a password.
func (s *Server) gitAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pw, ok := r.BasicAuth(); !ok || pw != s.token {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Authentication failed", http.StatusUnauthorized)
			return
		}
		s.mu.Lock()
		s.calls[r.Method+" "+strings.TrimPrefix(r.URL.Path, "/git/"+s.owner+"/"+s.repo+".git")]++
		s.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		s.mu.Lock()
		s.gitBytes += cw.n
		s.mu.Unlock()
	})
}

// countingWriter counts the bytes of body an answer carries.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Flush lets the CGI handler stream a pack as git writes it.
func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

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

// getTree lists a tree; with ?recursive=1, every entry under it.
func (s *Server) getTree(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	t, err := object.GetTree(st, plumbing.NewHash(r.PathValue("sha")))
	if err != nil {
		return 0, nil, fail(http.StatusNotFound, "Not Found")
	}
	recursive := r.URL.Query().Get("recursive") != ""
	var entries []map[string]any
	var walk func(t *object.Tree, prefix string) error
	walk = func(t *object.Tree, prefix string) error {
		for _, e := range t.Entries {
			p := prefix + e.Name
			typ := "blob"
			switch e.Mode {
			case filemode.Dir:
				typ = "tree"
			case filemode.Submodule:
				typ = "commit"
			}
			ent := map[string]any{"path": p, "mode": fmt.Sprintf("%06o", uint32(e.Mode)), "type": typ, "sha": e.Hash.String()}
			if typ == "blob" {
				if n, err := st.EncodedObjectSize(e.Hash); err == nil {
					ent["size"] = n
				}
			}
			entries = append(entries, ent)
			if typ == "tree" && recursive {
				sub, err := object.GetTree(st, e.Hash)
				if err != nil {
					return err
				}
				if err := walk(sub, p+"/"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(t, ""); err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	truncated := false
	if s.treeLimit > 0 && len(entries) > s.treeLimit { // s.mu is held
		entries, truncated = entries[:s.treeLimit], true
	}
	return http.StatusOK, map[string]any{"sha": t.Hash.String(), "tree": entries, "truncated": truncated}, nil
}

// rawBody is an answer sent as it is, not as JSON.
type rawBody []byte

// getBlob answers raw content for Accept: application/vnd.github.raw (as
// go-github's GetBlobRaw asks), base64 JSON otherwise.
func (s *Server) getBlob(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	o, err := st.EncodedObject(plumbing.BlobObject, plumbing.NewHash(r.PathValue("sha")))
	if err != nil {
		return 0, nil, fail(http.StatusNotFound, "Not Found")
	}
	rd, err := o.Reader()
	if err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	if strings.Contains(r.Header.Get("Accept"), "raw") {
		return http.StatusOK, rawBody(data), nil
	}
	return http.StatusOK, map[string]any{"sha": o.Hash().String(), "size": len(data), "encoding": "base64",
		"content": base64.StdEncoding.EncodeToString(data)}, nil
}

func putObject(st *filesystem.Storage, t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	o := st.NewEncodedObject()
	o.SetType(t)
	w, _ := o.Writer()
	w.Write(data)
	w.Close()
	return st.SetEncodedObject(o)
}

func (s *Server) createBlob(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	var in struct{ Content, Encoding string }
	if e := decode(r, &in); e != nil {
		return 0, nil, e
	}
	data := []byte(in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return 0, nil, fail(http.StatusUnprocessableEntity, "content is not valid Base64")
		}
	default:
		return 0, nil, fail(http.StatusUnprocessableEntity, "encoding must be utf-8 or base64")
	}
	h, err := putObject(st, plumbing.BlobObject, data)
	if err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	return http.StatusCreated, map[string]any{"sha": h.String(), "url": s.URL + "repos/" + s.owner + "/" + s.repo + "/git/blobs/" + h.String()}, nil
}

// dir is a tree being edited: entries by name, subdirectories loaded as
// they are touched.
type dir struct {
	entries map[string]*dirEntry
}

type dirEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
	sub  *dir // a subtree that was touched
}

func loadDir(st *filesystem.Storage, h plumbing.Hash) (*dir, error) {
	d := &dir{entries: map[string]*dirEntry{}}
	if h.IsZero() {
		return d, nil
	}
	t, err := object.GetTree(st, h)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		d.entries[e.Name] = &dirEntry{mode: e.Mode, hash: e.Hash}
	}
	return d, nil
}

// set puts e at p (nil deletes), creating directories on the way.
func (d *dir) set(st *filesystem.Storage, p []string, e *dirEntry) error {
	if len(p) == 1 {
		if e == nil {
			delete(d.entries, p[0])
		} else {
			d.entries[p[0]] = e
		}
		return nil
	}
	cur := d.entries[p[0]]
	if cur == nil {
		if e == nil {
			return nil
		}
		cur = &dirEntry{mode: filemode.Dir, sub: &dir{entries: map[string]*dirEntry{}}}
		d.entries[p[0]] = cur
	}
	if cur.mode != filemode.Dir {
		if e == nil {
			return nil
		}
		// GitHub replaces a file by a directory of the same name.
		cur.mode, cur.sub = filemode.Dir, &dir{entries: map[string]*dirEntry{}}
	}
	if cur.sub == nil {
		sub, err := loadDir(st, cur.hash)
		if err != nil {
			return err
		}
		cur.sub = sub
	}
	return cur.sub.set(st, p[1:], e)
}

// write stores d and the subtrees touched, dropping emptied directories,
// and returns its hash (zero when empty).
func (d *dir) write(st *filesystem.Storage) (plumbing.Hash, error) {
	var t object.Tree
	for name, e := range d.entries {
		if e.sub != nil {
			h, err := e.sub.write(st)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if h.IsZero() {
				continue
			}
			e.hash = h
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash})
	}
	if len(t.Entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	sort.Slice(t.Entries, func(i, j int) bool { return sortName(t.Entries[i]) < sortName(t.Entries[j]) })
	o := st.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(o)
}

func sortName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

var modes = map[string]struct {
	mode filemode.FileMode
	typ  string
}{
	"100644": {filemode.Regular, "blob"}, "100755": {filemode.Executable, "blob"},
	"120000": {filemode.Symlink, "blob"}, "040000": {filemode.Dir, "tree"}, "160000": {filemode.Submodule, "commit"},
}

func (s *Server) createTree(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path, Mode, Type string
			SHA              *string
			Content          *string
		}
	}
	if e := decode(r, &in); e != nil {
		return 0, nil, e
	}
	var base plumbing.Hash
	if in.BaseTree != "" {
		base = plumbing.NewHash(in.BaseTree)
		if _, err := object.GetTree(st, base); err != nil || len(in.BaseTree) != 40 {
			return 0, nil, fail(http.StatusUnprocessableEntity, "base_tree is not a valid tree oid")
		}
	}
	root, err := loadDir(st, base)
	if err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	for i, e := range in.Tree {
		parts := strings.Split(e.Path, "/")
		for _, c := range parts {
			if c == "" || c == "." || c == ".." || c == ".git" {
				return 0, nil, fail(http.StatusUnprocessableEntity, "tree.path contains a malformed path component")
			}
		}
		m, ok := modes[e.Mode]
		if !ok || (e.Type != "" && e.Type != m.typ) {
			return 0, nil, fail(http.StatusUnprocessableEntity, "Must supply a valid tree.mode and tree.type (entry %d)", i)
		}
		var de *dirEntry
		switch {
		case e.SHA != nil && e.Content != nil:
			return 0, nil, fail(http.StatusUnprocessableEntity, "Must supply either tree.sha or tree.content, not both")
		case e.Content != nil:
			h, err := putObject(st, plumbing.BlobObject, []byte(*e.Content))
			if err != nil {
				return 0, nil, fail(http.StatusInternalServerError, "%v", err)
			}
			de = &dirEntry{mode: m.mode, hash: h}
		case e.SHA != nil:
			h := plumbing.NewHash(*e.SHA)
			if m.typ != "commit" {
				if _, err := st.EncodedObject(plumbing.AnyObject, h); err != nil || len(*e.SHA) != 40 {
					return 0, nil, fail(http.StatusUnprocessableEntity, "tree.sha %s is not a valid %s", *e.SHA, m.typ)
				}
			}
			de = &dirEntry{mode: m.mode, hash: h}
		}
		if err := root.set(st, parts, de); err != nil {
			return 0, nil, fail(http.StatusInternalServerError, "%v", err)
		}
	}
	h, err := root.write(st)
	if err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	if h.IsZero() {
		t := object.Tree{}
		o := st.NewEncodedObject()
		t.Encode(o)
		h, _ = st.SetEncodedObject(o)
	}
	return http.StatusCreated, map[string]any{"sha": h.String(), "truncated": false}, nil
}

type person struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (p *person) signature() (object.Signature, error) {
	when, err := time.Parse(time.RFC3339, p.Date)
	if err != nil {
		return object.Signature{}, err
	}
	return object.Signature{Name: p.Name, Email: p.Email, When: when}, nil
}

func (s *Server) createCommit(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	var in struct {
		Message   *string
		Tree      string
		Parents   []string
		Author    *person
		Committer *person
	}
	if e := decode(r, &in); e != nil {
		return 0, nil, e
	}
	if in.Message == nil {
		return 0, nil, fail(http.StatusUnprocessableEntity, "message is missing")
	}
	if _, err := object.GetTree(st, plumbing.NewHash(in.Tree)); err != nil || len(in.Tree) != 40 {
		return 0, nil, fail(http.StatusUnprocessableEntity, "Tree SHA does not exist")
	}
	c := object.Commit{Message: *in.Message, TreeHash: plumbing.NewHash(in.Tree)}
	for _, p := range in.Parents {
		if !s.isCommit(st, p) {
			return 0, nil, fail(http.StatusUnprocessableEntity, "Parent SHA does not exist or is not a commit object")
		}
		c.ParentHashes = append(c.ParentHashes, plumbing.NewHash(p))
	}
	if in.Author == nil {
		in.Author = &person{Name: s.owner, Email: s.owner + "@users.noreply.github.com", Date: time.Now().Format(time.RFC3339)}
	}
	if in.Committer == nil {
		in.Committer = in.Author
	}
	var err error
	if c.Author, err = in.Author.signature(); err != nil {
		return 0, nil, fail(http.StatusUnprocessableEntity, "author.date is not a valid ISO 8601 date")
	}
	if c.Committer, err = in.Committer.signature(); err != nil {
		return 0, nil, fail(http.StatusUnprocessableEntity, "committer.date is not a valid ISO 8601 date")
	}
	o := st.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	h, err := st.SetEncodedObject(o)
	if err != nil {
		return 0, nil, fail(http.StatusInternalServerError, "%v", err)
	}
	return http.StatusCreated, s.commitBody(h, &c), nil
}

func (s *Server) commitBody(h plumbing.Hash, c *object.Commit) map[string]any {
	sig := func(g object.Signature) map[string]string {
		return map[string]string{"name": g.Name, "email": g.Email, "date": g.When.UTC().Format(time.RFC3339)}
	}
	var parents []map[string]string
	for _, p := range c.ParentHashes {
		parents = append(parents, map[string]string{"sha": p.String()})
	}
	return map[string]any{
		"sha": h.String(), "message": c.Message, "tree": map[string]string{"sha": c.TreeHash.String()},
		"parents": parents, "author": sig(c.Author), "committer": sig(c.Committer),
		"html_url": strings.TrimSuffix(s.srv.URL, "/") + path.Join("/", s.owner, s.repo, "commit", h.String()),
	}
}

func (s *Server) getCommit(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	c, err := object.GetCommit(st, plumbing.NewHash(r.PathValue("sha")))
	if err != nil {
		return 0, nil, fail(http.StatusNotFound, "Not Found")
	}
	return http.StatusOK, s.commitBody(c.Hash, c), nil
}

func (s *Server) createPull(r *http.Request, st *filesystem.Storage) (int, any, *apiError) {
	var in struct{ Title, Body, Head, Base string }
	if e := decode(r, &in); e != nil {
		return 0, nil, e
	}
	head, ok1 := s.head("refs/heads/" + in.Head)
	base, ok2 := s.head("refs/heads/" + in.Base)
	switch {
	case !ok1 || !ok2:
		return 0, nil, fail(http.StatusUnprocessableEntity, "Validation Failed: head or base does not exist")
	case head == base:
		return 0, nil, fail(http.StatusUnprocessableEntity, "Validation Failed: No commits between %s and %s", in.Base, in.Head)
	}
	n := len(s.pulls) + 1
	pr := PullRequest{Number: n, Title: in.Title, Body: in.Body, Head: in.Head, Base: in.Base, HeadSHA: head.String(),
		HTMLURL: fmt.Sprintf("%s/%s/%s/pull/%d", s.srv.URL, s.owner, s.repo, n)}
	s.pulls = append(s.pulls, pr)
	return http.StatusCreated, map[string]any{"number": n, "html_url": pr.HTMLURL, "state": "open", "title": in.Title}, nil
}
