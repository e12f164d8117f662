package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// twoRepos is a worker with two repositories: api, a bare repository, and
// web, a working tree, each pulled whole at the start.
func twoRepos(t *testing.T) (w *worker.Worker, api, web string) {
	t.Helper()
	api = repo(t, true, map[string]string{"main.go": "package api\n", "docs/README.md": "the api\n"})
	web = repo(t, false, map[string]string{"index.html": "<p>web</p>\n", "app.js": "let x = 1\n"})
	spec := func(typ, path string) *worker.TargetSpec {
		return &worker.TargetSpec{Type: typ, Path: path, Branch: "main"}
	}
	w = &worker.Worker{Name: "fullstack", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		Repos: []*worker.RepoConfig{
			{Name: "api", DefaultTarget: spec("local-bare", api), Targets: map[string]*worker.TargetSpec{},
				AutoPull: []worker.PullSpec{{Path: ".", Source: spec("local-bare", api)}}},
			{Name: "web", DefaultTarget: spec("local", web), Targets: map[string]*worker.TargetSpec{},
				AutoPull: []worker.PullSpec{{Path: ".", Source: spec("local", web)}}},
		}}
	return w, api, web
}

func newMulti(t *testing.T, w *worker.Worker, policy approval.Policy) (*session.Session, *ledger.Ledger) {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s, err := session.New(context.Background(), w, session.Options{Gate: approval.NewGate(l, policy), Timeout: 10e9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, l
}

func autoBoth(t *testing.T, w *worker.Worker) approval.Policy {
	t.Helper()
	p := approval.Policy{Mode: approval.ModeAsk}
	for _, a := range []string{"api:default", "web"} {
		id, err := w.ResolveTargetID(a)
		if err != nil {
			t.Fatal(err)
		}
		p.AutoApprove = append(p.AutoApprove, id)
	}
	return p
}

func mustRepo(t *testing.T, s *session.Session, name string, paths ...string) *session.Repo {
	t.Helper()
	h, err := s.Repo(name, paths...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func unstaged(h *session.Repo) []string {
	var out []string
	for _, c := range h.Status().Unstaged {
		out = append(out, c.Path)
	}
	return out
}

// A worker with two repositories writes in both, stages and pushes each to
// its own target with paths relative to that repository and the right
// parents; a conflict in one does not block the other.
func TestMultiRepoStageAndPush(t *testing.T) {
	w, api, web := twoRepos(t)
	s, l := newMulti(t, w, autoBoth(t, w))
	ws := s.Workspace()
	for p, want := range map[string]string{"api/main.go": "package api\n", "web/index.html": "<p>web</p>\n"} {
		if got, err := ws.ReadFile(p); err != nil || string(got) != want {
			t.Fatalf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
	if _, err := s.Repo(""); !errors.Is(err, session.ErrWhichRepo) || !strings.Contains(err.Error(), "api, web") {
		t.Fatalf("no repository named: %v", err)
	}
	if _, err := s.Repo("", "api/a", "web/b"); !errors.Is(err, session.ErrWhichRepo) {
		t.Fatalf("paths in two repositories: %v", err)
	}
	if _, err := s.Repo("ios"); err == nil || !strings.Contains(err.Error(), `no repository is named "ios"; the repositories are api, web`) {
		t.Fatalf("an unknown repository: %v", err)
	}
	must(t, ws.WriteFile("api/main.go", []byte("package api\n\nfunc New() {}\n"), 0o644))
	must(t, ws.WriteFile("api/handlers/user.go", []byte("package handlers\n"), 0o644))
	must(t, ws.WriteFile("web/index.html", []byte("<p>web, edited</p>\n"), 0o644))
	must(t, ws.WriteFile("notes.txt", []byte("mine\n"), 0o644))

	ah := mustRepo(t, s, "", "api/handlers/user.go")
	wh := mustRepo(t, s, "web")
	if ah.Name() != "api" {
		t.Fatalf("api/handlers/user.go is in %q", ah.Name())
	}
	if got := unstaged(ah); !slices.Equal(got, []string{"handlers/user.go", "main.go"}) {
		t.Errorf("api's unstaged changes: %v", got)
	}
	if got := unstaged(wh); !slices.Equal(got, []string{"index.html"}) {
		t.Errorf("web's unstaged changes: %v", got)
	}
	if out := s.Outside(); len(out) != 1 || out[0].Path != "notes.txt" {
		t.Errorf("outside every repository: %v", out)
	}
	if _, err := ah.Rel([]string{"web/index.html"}); err == nil || !strings.Contains(err.Error(), `give repo "web"`) {
		t.Errorf("a web path staged in api: %v", err)
	}

	ac, err := ah.Stage(nil, "api: New and a user handler")
	must(t, err)
	wc, err := wh.Stage(nil, "web: edit the page")
	must(t, err)
	var paths []string
	for _, f := range ac.Files {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, []string{"handlers/user.go", "main.go"}) {
		t.Errorf("api's commit has %v", paths)
	}
	if _, err := ah.Lookup(wc.ID.String()); err == nil {
		t.Errorf("api's area knows web's commit")
	}

	// Someone changes web's page meanwhile: web's push conflicts, api's
	// goes through.
	commitTo(t, web, "index.html", "<p>upstream</p>\n")
	apiMain := strings.TrimSpace(git(t, api, "rev-parse", "main"))
	if _, err := wh.Push(context.Background(), "", "", nil); err == nil || !strings.Contains(err.Error(), "repository web: ") {
		t.Fatalf("web's conflicting push: %v", err)
	}
	res, err := ah.Push(context.Background(), "", "", nil)
	must(t, err)
	if res.Commit != ac.ID {
		t.Fatalf("api pushed %s, want %s", res.Commit, ac.ID)
	}
	if got := git(t, api, "show", "main:handlers/user.go"); got != "package handlers\n" {
		t.Errorf("api main:handlers/user.go = %q", got)
	}
	if got := strings.TrimSpace(git(t, api, "rev-parse", "main^")); got != apiMain {
		t.Errorf("api's new commit has parent %s, want %s", got, apiMain)
	}
	if got := git(t, api, "ls-tree", "--name-only", "main"); strings.Contains(got, "api") || strings.Contains(got, "web") {
		t.Errorf("api's tree has the workspace's directories: %q", got)
	}
	if st := ah.Status(); st.Base != ac.ID || len(st.Staged) != 0 {
		t.Errorf("after the push api's base is %s with %d staged", st.Base, len(st.Staged))
	}
	if st := wh.Status(); len(st.Staged) != 1 {
		t.Errorf("web lost its staged commit: %+v", st.Staged)
	}
	// The request named the repository.
	recs, err := ledger.Records(l.Path())
	must(t, err)
	var repos []string
	for _, r := range recs {
		if r.Kind == ledger.KindRequest {
			var req approval.Request
			must(t, json.Unmarshal(r.Data, &req))
			repos = append(repos, req.Repo)
			if req.Session != s.ID() {
				t.Errorf("the request names session %q, not %q", req.Session, s.ID())
			}
		}
	}
	if !slices.Contains(repos, "api") {
		t.Errorf("no request names repository api: %v", repos)
	}
	// web resolves its conflict by pulling and keeping upstream's page;
	// then its push goes through too.
	_, err = wh.Discard("", true)
	must(t, err)
	must(t, ws.WriteFile("web/index.html", []byte("<p>web</p>\n"), 0o644)) // as the base has it
	_, err = wh.Pull(context.Background(), "", nil, "")
	must(t, err)
	must(t, ws.WriteFile("web/app.js", []byte("let x = 2\n"), 0o644))
	_, err = wh.Stage([]string{"app.js"}, "web: x is 2")
	must(t, err)
	if _, err := wh.Push(context.Background(), "", "", nil); err != nil {
		t.Fatal(err)
	}
	if got := git(t, web, "show", "main:app.js"); got != "let x = 2\n" {
		t.Errorf("web main:app.js = %q", got)
	}
}

// A rollback takes every repository back, and replays the part of a
// repository whose base moved since the checkpoint.
func TestMultiRepoRollback(t *testing.T) {
	w, api, _ := twoRepos(t)
	s, _ := newMulti(t, w, autoBoth(t, w))
	ws := s.Workspace()
	must(t, ws.WriteFile("api/a.go", []byte("package api // a\n"), 0o644))
	must(t, ws.WriteFile("web/a.js", []byte("a\n"), 0o644))
	_, err := s.Checkpoint("both")
	must(t, err)
	must(t, ws.WriteFile("api/b.go", []byte("package api // b\n"), 0o644))
	must(t, ws.Remove("web/a.js"))
	must(t, ws.WriteFile("web/index.html", []byte("changed\n"), 0o644))
	rb, err := s.Rollback("both")
	must(t, err)
	if rb.Replayed {
		t.Errorf("nothing moved, yet the rollback replayed")
	}
	for p, want := range map[string]string{"api/a.go": "package api // a\n", "web/a.js": "a\n", "web/index.html": "<p>web</p>\n"} {
		if got, err := ws.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("after the rollback %s = %q, %v", p, got, err)
		}
	}
	if _, err := ws.ReadFile("api/b.go"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("api/b.go survived the rollback: %v", err)
	}

	// api's base moves (upstream commits; the worker pulls); web's does
	// not. Rolling back replays api's checkpoint onto its new base and
	// restores web's as it was.
	commitTo(t, api, "upstream.go", "package api // upstream\n")
	must(t, ws.WriteFile("web/late.js", []byte("late\n"), 0o644))
	_, err = mustRepo(t, s, "api").Pull(context.Background(), "", nil, "")
	must(t, err)
	rb, err = s.Rollback("both")
	must(t, err)
	if !rb.Replayed {
		t.Errorf("api's base moved, yet the rollback did not replay")
	}
	for p, want := range map[string]string{"api/a.go": "package api // a\n", "api/upstream.go": "package api // upstream\n", "web/a.js": "a\n"} {
		if got, err := ws.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("after the replayed rollback %s = %q, %v", p, got, err)
		}
	}
	if _, err := ws.ReadFile("web/late.js"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("web/late.js survived the rollback: %v", err)
	}
	if got := unstaged(mustRepo(t, s, "api")); !slices.Equal(got, []string{"a.go"}) {
		t.Errorf("api's unstaged changes after the replay: %v (upstream.go must not be the worker's)", got)
	}
}

// A multi-repository session survives a crash: each repository's base,
// staged commits and unstaged changes, and the checkpoints' bases.
func TestMultiRepoDurable(t *testing.T) {
	w, _, _ := twoRepos(t)
	d := newDurableWorker(t, w, approval.Policy{Mode: approval.ModeAsk}, nil)
	ws := d.s.Workspace()
	must(t, ws.WriteFile("api/a.go", []byte("package api // a\n"), 0o644))
	must(t, ws.WriteFile("web/a.js", []byte("a\n"), 0o644))
	_, err := mustRepo(t, d.s, "api").Stage(nil, "api: a")
	must(t, err)
	must(t, d.s.Save())
	_, err = d.s.Checkpoint("cp")
	must(t, err)
	must(t, ws.WriteFile("web/b.js", []byte("b\n"), 0o644))
	_, err = mustRepo(t, d.s, "web").Stage([]string{"a.js"}, "web: a")
	must(t, err)
	must(t, d.s.Save())
	before := look(t, d.s)
	status := func(s *session.Session) string {
		var b strings.Builder
		for _, name := range s.Repos() {
			st := mustRepo(t, s, name).Status()
			b.WriteString(name + " " + st.Base.String() + " " + st.From)
			for _, c := range st.Staged {
				b.WriteString(" " + c.ID.String())
			}
			for _, c := range st.Unstaged {
				b.WriteString(" " + c.Path)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	want := status(d.s)
	rec := d.crashAndResume(t)
	if got := status(d.s); got != want {
		t.Errorf("after resuming:\n%s\nwant\n%s", got, want)
	}
	samePicture(t, "after resuming", look(t, d.s), before)
	if len(rec.Staged) != 2 || len(rec.Changed) != 1 || rec.Changed[0].Path != "web/b.js" {
		t.Errorf("recovered: %d staged, changed %v", len(rec.Staged), rec.Changed)
	}
	// The checkpoint still takes both back.
	_, err = d.s.Rollback("cp")
	must(t, err)
	if _, err := d.s.Workspace().ReadFile("web/b.js"); err == nil {
		t.Errorf("web/b.js survived a rollback after resuming")
	}
	// A worker file that names other repositories now cannot resume it.
	session.Crash(d.s)
	d.l.Close()
	d.s = nil
	dir, err := session.OpenStateDir(d.root, d.id)
	must(t, err)
	other := *w
	other.Repos = w.Repos[:1]
	if _, _, err := session.Resume(context.Background(), &other, d.options(t, dir)); err == nil || !strings.Contains(err.Error(), "--new") {
		t.Errorf("resuming with another set of repositories: %v", err)
	}
}

// --auto-approve names a multi-repository worker's targets as
// REPO:TARGET; a bare name says how to write one.
func TestMultiRepoResolveTargetID(t *testing.T) {
	w, api, web := twoRepos(t)
	for _, c := range []struct{ in, want, err string }{
		{"api:default", "local-bare:" + api, ""},
		{"api", "local-bare:" + api, ""},
		{"web:default", "local:" + web, ""},
		{"local:" + web, "local:" + web, ""},
		{"default", "", "REPO:TARGET"},
		{"api:backup", "", "repository api has no target named \"backup\""},
		{"ios:default", "", "this worker has the repositories api, web"},
	} {
		got, err := w.ResolveTargetID(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %q, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// A command sees every repository, and what it writes lands in each
// repository's unstaged changes.
func TestMultiRepoRun(t *testing.T) {
	needSandbox(t)
	w, _, _ := twoRepos(t)
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	s, err := session.New(context.Background(), w, session.Options{Gate: approval.NewGate(l, approval.Policy{}),
		Run: &session.RunOptions{MirrorDir: filepath.Join(dir, "mirrors")}})
	must(t, err)
	t.Cleanup(s.Close)
	res, err := s.Run(context.Background(), session.RunArgs{Command: "cat api/main.go web/index.html; echo gen > api/gen.go; echo x >> web/app.js"}, nil)
	must(t, err)
	if res.Exit != 0 || res.Stdout != "package api\n<p>web</p>\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	if got := unstaged(mustRepo(t, s, "api")); !slices.Equal(got, []string{"gen.go"}) {
		t.Errorf("api's changes after the run: %v", got)
	}
	if got := unstaged(mustRepo(t, s, "web")); !slices.Equal(got, []string{"app.js"}) {
		t.Errorf("web's changes after the run: %v", got)
	}
}
