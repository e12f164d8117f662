package gittools_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// The git tools of a two-repository session: status shows each, stage
// and diff infer the repository from paths or the commit, and refuse,
// naming the repositories, when nothing says which; each push goes to its
// repository's target and the reviewer is told which repository asks.
func TestMultiRepoTools(t *testing.T) {
	api, web := project(t), project(t)
	spec := func(p string) *worker.TargetSpec { return &worker.TargetSpec{Type: "local", Path: p, Branch: "main"} }
	w := &worker.Worker{Name: "fullstack", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		Repos: []*worker.RepoConfig{
			{Name: "api", DefaultTarget: spec(api), Targets: map[string]*worker.TargetSpec{}, AutoPull: []worker.PullSpec{{Path: ".", Source: spec(api)}}},
			{Name: "web", DefaultTarget: spec(web), Targets: map[string]*worker.TargetSpec{}, AutoPull: []worker.PullSpec{{Path: ".", Source: spec(web)}}},
		}}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, approval.Policy{Mode: approval.ModeAsk})
	var mu sync.Mutex
	asked := map[string]string{} // repository -> target
	reviewer(t, gate, func(r *approval.Request) approval.Decision {
		mu.Lock()
		asked[r.Repo] = r.Target
		mu.Unlock()
		return approval.Decision{Verdict: approval.Approve}
	})
	s, err := session.New(context.Background(), w, session.Options{Gate: gate, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h := &harness{t, api, s, gate, l}

	mustContain(t, "read_file", h.call("read_file", map[string]any{"path": "web/README.md"}), "# Project")
	h.call("write_file", map[string]any{"path": "api/x.md", "content": "api x\n"})
	h.call("write_file", map[string]any{"path": "web/templates/y.md", "content": "web y\n"})
	h.call("write_file", map[string]any{"path": "notes.txt", "content": "scratch\n"})
	mustContain(t, "git_status", h.call("git_status", nil),
		"repository api (api/):", "  unstaged (1):\n    + api/x.md", "repository web (web/):", "+ web/templates/y.md",
		"outside every repository (1;", "+ notes.txt")
	mustContain(t, "git_status repo=web", h.call("git_status", map[string]any{"repo": "web"}), "+ web/templates/y.md")

	_, err = h.try("git_stage", map[string]any{"message": "which?"})
	mustContain(t, "git_stage without repo", errString(err), "the repositories api, web", "give repo")
	_, err = h.try("git_stage", map[string]any{"files": []string{"api/x.md", "web/templates/y.md"}, "message": "both"})
	mustContain(t, "git_stage across repositories", errString(err), "the repositories api, web")
	_, err = h.try("git_stage", map[string]any{"repo": "api", "files": []string{"web/templates/y.md"}, "message": "wrong"})
	mustContain(t, "git_stage of a web path in api", errString(err), `web/templates/y.md is in repository web, not api: give repo "web"`)
	_, err = h.try("git_status", map[string]any{"repo": "ios"})
	mustContain(t, "git_status of an unknown repository", errString(err), `no repository is named "ios"; the repositories are api, web`)

	out := h.call("git_stage", map[string]any{"files": []string{"api/x.md"}, "message": "api: x"})
	mustContain(t, "git_stage in api", out, "repository api, paths relative to api/", "+ x.md")
	apiCommit := regexp.MustCompile(`staged ([0-9a-f]{7})`).FindStringSubmatch(out)[1]
	mustContain(t, "git_stage in web", h.call("git_stage", map[string]any{"repo": "web", "message": "web: y"}), "+ templates/y.md")
	mustContain(t, "git_diff of api's commit", h.call("git_diff", map[string]any{"commit_id": apiCommit}),
		"of repository api", "+++ b/x.md")

	mustContain(t, "git_push of api's commit", h.call("git_push", map[string]any{"commit_id": apiCommit}), "pushed "+apiCommit)
	mustContain(t, "git_push of web", h.call("git_push", map[string]any{"repo": "web"}), "pushed ")
	if got := git(t, api, "show", "main:x.md"); got != "api x\n" {
		t.Errorf("api main:x.md = %q", got)
	}
	if got := git(t, web, "show", "main:templates/y.md"); got != "web y\n" {
		t.Errorf("web main:templates/y.md = %q", got)
	}
	if got := git(t, api, "ls-tree", "-r", "--name-only", "main"); strings.Contains(got, "y.md") {
		t.Errorf("web's file reached api:\n%s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked["api"] != "local:"+api || asked["web"] != "local:"+web {
		t.Errorf("the reviewer was asked %v", asked)
	}
}
