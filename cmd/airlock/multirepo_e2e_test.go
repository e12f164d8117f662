package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real airlock serve with a worker file of two repositories (the
// README's shape): both appear in the workspace, the git tools work per
// repository, --auto-approve takes REPO:TARGET, and each push lands in its
// own repository with paths relative to it.
func TestMultiRepoEndToEnd(t *testing.T) {
	requireGit(t)
	bin := airlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := t.TempDir()
	env := isolatedEnv(t, root)
	api, web := filepath.Join(root, "api"), filepath.Join(root, "web")
	initRepo(t, env, api, map[string]string{"server.go": "package api\n"})
	initRepo(t, env, web, map[string]string{"index.html": "<p>hi</p>\n"})
	workerFile := filepath.Join(root, "fullstack.md")
	doc := `---
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
	if err := os.WriteFile(workerFile, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	serveErr := &lockedBuffer{}
	serve := exec.Command(bin, "serve", "--worker", workerFile, "--run", "off", "--auto-approve", "api:default", "--auto-approve", "web:default")
	serve.Env, serve.Dir, serve.Stderr = env, root, serveErr
	client := mcp.NewClient(&mcp.Implementation{Name: "airlock-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve, TerminateDuration: 3 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, serveErr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("airlock serve's stderr:\n%s", serveErr.String())
		}
	})
	w := &worker{t: t, ctx: ctx, cs: cs}
	mustContain(t, "the instructions", cs.InitializeResult().Instructions, "2 git repositories", "api/, web/")
	mustContain(t, "airlock serve's stderr", serveErr.Await("api/ to local:"+api, "web/ to local:"+web), "api/ to local:"+api, "web/ to local:"+web)

	w.call("write_file", map[string]any{"path": "api/users.go", "content": "package api\n\n// Users lists the users.\nfunc Users() {}\n"})
	w.call("edit_file", map[string]any{"path": "web/index.html", "old_text": "hi", "new_text": "hi, <a href=/users>users</a>"})
	mustContain(t, "git_status", w.call("git_status", nil), "repository api (api/):", "+ api/users.go", "repository web (web/):", "M web/index.html")
	mustContain(t, "git_stage without repo", w.refused("git_stage", map[string]any{"message": "which"}), "api, web", "give repo")
	w.call("git_stage", map[string]any{"files": []string{"api/users.go"}, "message": "api: list the users"})
	w.call("git_stage", map[string]any{"repo": "web", "message": "web: link the users"})
	mustContain(t, "api's push", w.call("git_push", map[string]any{"repo": "api"}), "pushed ")
	mustContain(t, "web's push", w.call("git_push", map[string]any{"repo": "web"}), "pushed ", "airlock/web")
	if got := mustGit(t, env, api, "show", "main:users.go"); !strings.Contains(got, "func Users()") {
		t.Errorf("api main:users.go = %q", got)
	}
	if got := mustGit(t, env, web, "show", "airlock/web:index.html"); got != "<p>hi, <a href=/users>users</a></p>\n" {
		t.Errorf("web airlock/web:index.html = %q", got)
	}
	ledger, err := os.ReadFile(filepath.Join(root, "state", "airlock", "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{"api", "web"} {
		if !strings.Contains(string(ledger), fmt.Sprintf(`"repo":%q`, repo)) {
			t.Errorf("the ledger names no request of repository %s", repo)
		}
	}
}
