package scenario

import (
	"path/filepath"
	"strings"
	"testing"
)

const oneRepo = `---
name: writer
git:
  default_target: { type: local, path: ./project, branch: main }
  auto_pull: [{ path: ., source: { type: local, path: ./project } }]
---
Write the reports.
`

// pushLands: a worker's change, staged and pushed under auto-approval,
// lands on the target's branch, and the ledger holds the request.
func pushLands(t *testing.T, d Driver, ephemeral bool) {
	s := setup(t, ephemeral, oneRepo, "default")
	repo := filepath.Join(s.Dir, "project")
	newRepo(t, s.Env, repo, map[string]string{"README.md": "# Project\n"})
	c := d.Start(t, s)
	mustContain(t, "read_file", call(t, c, "read_file", map[string]any{"path": "README.md"}), "# Project")
	call(t, c, "write_file", map[string]any{"path": "reports/q3.md", "content": "# Q3\n"})
	mustContain(t, "git_status", call(t, c, "git_status", nil), "+ reports/q3.md")
	out := call(t, c, "git_stage", map[string]any{"message": "Add the Q3 report"})
	m := stagedID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("git_stage said no commit id: %s", out)
	}
	mustContain(t, "git_diff", call(t, c, "git_diff", map[string]any{"commit_id": m[1]}), "+++ b/reports/q3.md", "+# Q3")
	mustContain(t, "git_push", call(t, c, "git_push", nil), "pushed "+m[1])
	if got := Git(t, s.Env, repo, "show", "main:reports/q3.md"); got != "# Q3\n" {
		t.Errorf("main:reports/q3.md = %q", got)
	}
	if !ledgerHas(t, s, "target", "local:"+repo) {
		t.Errorf("the ledger names no push to local:%s", repo)
	}
	// Nothing is left to push.
	mustContain(t, "git_push again", refused(t, c, "git_push", nil), "nothing")
}

const twoRepos = `---
name: fullstack
repos:
  api:
    default_target: { type: local, path: ./api }
    auto_pull: [{ path: ., source: { type: local, path: ./api } }]
  web:
    default_target: { type: local, path: ./web, branch: airlock/web }
    auto_pull: [{ path: ., source: { type: local, path: ./web } }]
---
Add the /users endpoint to the api and show it on the web page.
`

// multiRepo: a worker file of two repositories (the README's shape):
// both appear in the workspace, the git tools work per repository (from
// repo, from paths, from the commit) and refuse, naming the repositories,
// when nothing says which; each push lands in its own repository with
// paths relative to it, and the ledger names the repository that asked.
func multiRepo(t *testing.T, d Driver, ephemeral bool) {
	s := setup(t, ephemeral, twoRepos, "api:default", "web:default")
	api, web := filepath.Join(s.Dir, "api"), filepath.Join(s.Dir, "web")
	newRepo(t, s.Env, api, map[string]string{"server.go": "package api\n"})
	newRepo(t, s.Env, web, map[string]string{"index.html": "<p>hi</p>\n", "README.md": "# Web\n"})
	c := d.Start(t, s)
	mustContain(t, "the instructions", c.Instructions(), "2 git repositories", "api/, web/")
	if l, ok := c.(ServerLog); ok {
		// The operator is told where each repository pushes.
		mustContain(t, "airlock serve's stderr", l.Await("api/ to local:"+api, "web/ to local:"+web), "api/ to local:"+api, "web/ to local:"+web)
	}
	mustContain(t, "read_file", call(t, c, "read_file", map[string]any{"path": "web/README.md"}), "# Web")

	call(t, c, "write_file", map[string]any{"path": "api/users.go", "content": "package api\n\n// Users lists the users.\nfunc Users() {}\n"})
	call(t, c, "edit_file", map[string]any{"path": "web/index.html", "old_text": "hi", "new_text": "hi, <a href=/users>users</a>"})
	call(t, c, "write_file", map[string]any{"path": "notes.txt", "content": "scratch\n"})
	mustContain(t, "git_status", call(t, c, "git_status", nil),
		"repository api (api/):", "  unstaged (1):\n    + api/users.go", "repository web (web/):", "M web/index.html",
		"outside every repository (1;", "+ notes.txt")
	mustContain(t, "git_status repo=web", call(t, c, "git_status", map[string]any{"repo": "web"}), "M web/index.html")

	mustContain(t, "git_stage without repo", refused(t, c, "git_stage", map[string]any{"message": "which?"}), "the repositories api, web", "give repo")
	mustContain(t, "git_stage across repositories",
		refused(t, c, "git_stage", map[string]any{"files": []string{"api/users.go", "web/index.html"}, "message": "both"}), "the repositories api, web")
	mustContain(t, "git_stage of a web path in api",
		refused(t, c, "git_stage", map[string]any{"repo": "api", "files": []string{"web/index.html"}, "message": "wrong"}),
		`web/index.html is in repository web, not api: give repo "web"`)
	mustContain(t, "git_status of an unknown repository", refused(t, c, "git_status", map[string]any{"repo": "ios"}),
		`no repository is named "ios"; the repositories are api, web`)

	out := call(t, c, "git_stage", map[string]any{"files": []string{"api/users.go"}, "message": "api: list the users"})
	mustContain(t, "git_stage in api", out, "repository api, paths relative to api/", "+ users.go")
	m := stagedID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("git_stage said no commit id: %s", out)
	}
	mustContain(t, "git_stage in web", call(t, c, "git_stage", map[string]any{"repo": "web", "message": "web: link the users"}), "M index.html")
	mustContain(t, "git_diff of api's commit", call(t, c, "git_diff", map[string]any{"commit_id": m[1]}), "of repository api", "+++ b/users.go")
	mustContain(t, "api's push", call(t, c, "git_push", map[string]any{"commit_id": m[1]}), "pushed "+m[1])
	mustContain(t, "web's push", call(t, c, "git_push", map[string]any{"repo": "web"}), "pushed ", "airlock/web")

	if got := Git(t, s.Env, api, "show", "main:users.go"); !strings.Contains(got, "func Users()") {
		t.Errorf("api main:users.go = %q", got)
	}
	if got := Git(t, s.Env, web, "show", "airlock/web:index.html"); got != "<p>hi, <a href=/users>users</a></p>\n" {
		t.Errorf("web airlock/web:index.html = %q", got)
	}
	if got := Git(t, s.Env, api, "ls-tree", "-r", "--name-only", "main"); strings.Contains(got, "index.html") || strings.Contains(got, "notes.txt") {
		t.Errorf("another repository's file reached api:\n%s", got)
	}
	// The reviewer is told which repository asks, and where to.
	for repo, target := range map[string]string{"api": "local:" + api, "web": "local:" + web} {
		if !ledgerHas(t, s, "repo", repo, "target", target) {
			t.Errorf("the ledger holds no request of repository %s to %s", repo, target)
		}
	}
}

// restart: the server ends and starts again; a durable session comes back
// whole (its files, its staged commit), an ephemeral one is gone.
func restart(t *testing.T, d Driver, ephemeral bool) {
	s := setup(t, ephemeral, oneRepo)
	newRepo(t, s.Env, filepath.Join(s.Dir, "project"), map[string]string{"README.md": "# Project\n"})
	c := d.Start(t, s)
	call(t, c, "write_file", map[string]any{"path": "work.md", "content": "work in progress\n"})
	call(t, c, "git_stage", map[string]any{"files": []string{"work.md"}, "message": "Start the work"})
	call(t, c, "write_file", map[string]any{"path": "later.md", "content": "later\n"})
	c = c.Restart(t)
	st := call(t, c, "git_status", nil)
	later, isErr := c.Call("read_file", map[string]any{"path": "later.md"})
	if ephemeral {
		if strings.Contains(st, "Start the work") || !isErr {
			t.Errorf("an ephemeral session survived its server: status\n%s\nlater.md: %s", st, later)
		}
		return
	}
	mustContain(t, "git_status after the restart", st, "Start the work", "+ later.md")
	if isErr || !strings.Contains(later, "later") {
		t.Errorf("later.md after the restart: %s", later)
	}
}
