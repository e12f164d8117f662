package githubemu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
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
	// protected are the branches with branch protection (Protect).
	protected map[string]bool
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
	mux.HandleFunc("GET "+p+"/branches/{branch...}", s.api(s.getBranch))
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
