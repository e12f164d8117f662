package githubemu

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

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
