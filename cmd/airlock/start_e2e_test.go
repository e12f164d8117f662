//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A worker file naming a repository that is not there, is no repository,
// or a branch to pull that does not exist stops airlock serve before it
// serves: exit 1, the file, line and column, and what to write instead.
// airlock serve without --worker outside a repository stops the same way.
func TestServeRefusesABadWorkerAtStart(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo := filepath.Join(root, "project")
	initRepo(t, env, repo, map[string]string{"README.md": "# p\n"})
	plain := filepath.Join(root, "plain")
	os.Mkdir(plain, 0o755)
	for _, c := range []struct {
		name, front string
		want        []string
	}{
		{"missing", "git:\n  default_target: { type: local, path: ./nowhere }\n",
			[]string{"w.md:4:40: git.default_target.path: " + filepath.Join(root, "nowhere") + " does not exist"}},
		{"not a repository", "git:\n  default_target: { type: local, path: ./plain }\n",
			[]string{"w.md:4:40: git.default_target.path:", "not a git repository", "git init " + plain}},
		{"branch to pull", "git:\n  default_target: { type: local, path: ./project, branch: agent }\n  auto_pull:\n    - path: .\n      source: { type: local, path: ./project, branch: mian }\n",
			[]string{"w.md:7:55: git.auto_pull[0].source.branch: branch mian does not exist in local:" + repo + "; its branches are main"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wf := filepath.Join(root, "w.md")
			os.WriteFile(wf, []byte("---\nname: w\n"+c.front+"---\n"), 0o644)
			_, stderr, code := runAirlock(t, env, root, "serve", "--worker", wf)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s", code, stderr)
			}
			mustContain(t, "serve's error", stderr, c.want...)
			if strings.Contains(stderr, "pushing to") {
				t.Errorf("serve started before refusing:\n%s", stderr)
			}
		})
	}
	_, stderr, code := runAirlock(t, env, plain, "serve")
	if code != 1 || !strings.Contains(stderr, "give --worker FILE") {
		t.Errorf("serve without --worker outside a repository: exit %d\n%s", code, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "state", "airlock", "sessions")); len(entries) != 0 {
		t.Errorf("a refused start left %d session(s)", len(entries))
	}
}

// airlock serve in a repository, as the README's one-liner starts it:
// the workspace holds the current branch from the first call, the MCP
// instructions say so, every tool carries its annotations, and a client
// that only looked leaves no session behind, while one that changed
// something does, and airlock sessions prune removes what is old.
func TestDefaultWorkerFirstStart(t *testing.T) {
	ctx, root, env, repo := project(t, map[string]string{"README.md": "# p\n", "src/main.go": "package main\n"})
	bin := airlockBinary(t)
	mustGit(t, env, repo, "switch", "-q", "-c", "work")
	head := strings.TrimSpace(mustGit(t, env, repo, "rev-parse", "--short=7", "HEAD"))
	sessions := filepath.Join(root, "state", "airlock", "sessions")

	d := startDurable(t, ctx, bin, env, repo)
	mustContain(t, "the instructions", d.cs.InitializeResult().Instructions,
		"The workspace holds branch work of local:"+repo+" at "+head+` ("Initial commit"): 2 files, at the workspace's root`,
		"git_push sends staged commits to local:"+repo+" (branch work)")
	if got := d.w.call("read_file", map[string]any{"path": "src/main.go"}); got != "package main\n" {
		t.Errorf("read_file at once: %q", got)
	}
	mustContain(t, "git_status", d.w.call("git_status", nil), "base: "+head+" from local:"+repo+" (work)")
	checkAnnotations(t, d.w, false)
	d.stdin.Close()
	d.wait(t)
	mustContain(t, "serve's goodbye", d.stderr.String(), "changed nothing, so it is not kept")
	if entries, _ := os.ReadDir(sessions); len(entries) != 0 {
		t.Fatalf("a session that changed nothing left %d directories", len(entries))
	}

	d = startDurable(t, ctx, bin, env, repo)
	d.w.call("write_file", map[string]any{"path": "notes.md", "content": "kept\n"})
	d.stdin.Close()
	d.wait(t)
	mustContain(t, "serve's goodbye", d.stderr.String(), "is saved in")
	entries, _ := os.ReadDir(sessions)
	if len(entries) != 1 {
		t.Fatalf("%d sessions after a change, want 1", len(entries))
	}
	prune := func(args ...string) string {
		out, errOut, code := runAirlock(t, env, root, append([]string{"sessions", "prune"}, args...)...)
		if code != 0 {
			t.Fatalf("sessions prune %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	mustContain(t, "prune within the age", prune(), "removed 0 session(s)", "kept 1 changed less than 24h0m0s ago")
	mustContain(t, "prune of unfinished work", prune("--older-than", "0"), "removed 0 session(s)", "kept 1 with work that has not left", "(1 changed, 0 staged, 0 pending)")
	mustContain(t, "prune --force --dry-run", prune("--older-than", "0", "--force", "--dry-run"), "would remove "+entries[0].Name())
	mustContain(t, "prune --force", prune("--older-than", "0", "--force"), "removed "+entries[0].Name(), "removed 1 session(s)")
	if entries, _ := os.ReadDir(sessions); len(entries) != 0 {
		t.Fatalf("%d sessions after prune --force", len(entries))
	}
}

// project makes a test's isolated environment under root and, in it, a
// repository at root/project with files on main; ctx bounds the test.
func project(t *testing.T, files map[string]string) (ctx context.Context, root string, env []string, repo string) {
	t.Helper()
	requireGit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	root = t.TempDir()
	env = isolatedEnv(t, root)
	repo = filepath.Join(root, "project")
	initRepo(t, env, repo, files)
	return ctx, root, env, repo
}

// checkAnnotations lists the tools over MCP and checks that each carries
// every hint, the readers read-only, and run open-world only with the
// network (--danger).
func checkAnnotations(t *testing.T, w *worker, networked bool) {
	t.Helper()
	lt, err := w.cs.ListTools(w.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	readers := map[string]bool{"read_file": true, "list_files": true, "search_files": true, "git_status": true,
		"git_diff": true, "list_checkpoints": true, "run_output": true}
	for _, tool := range lt.Tools {
		raw, _ := json.Marshal(tool.Annotations)
		var a map[string]any
		json.Unmarshal(raw, &a)
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "title"} {
			if _, ok := a[k]; !ok {
				t.Errorf("%s: annotations %s lack %s", tool.Name, raw, k)
			}
		}
		if ro := a["readOnlyHint"] == true; ro != readers[tool.Name] {
			t.Errorf("%s: readOnlyHint %v", tool.Name, ro)
		}
		open := a["openWorldHint"] == true
		switch tool.Name {
		case "git_push", "git_pull":
			if !open {
				t.Errorf("%s is not open-world", tool.Name)
			}
		case "run":
			if open != networked {
				t.Errorf("run: openWorldHint %v with the network %v", open, networked)
			}
		default:
			if open {
				t.Errorf("%s is open-world", tool.Name)
			}
		}
	}
}

// The README's Codex configuration, as Codex runs it: a server started
// with a cleaned environment plus what env_vars forwards meets the
// reviewer where the reviewer's own environment says (its socket and
// ledger), and says where at start.
func TestCodexSnippetMeetsTheReviewer(t *testing.T) {
	requireGit(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\\*\\*Codex\\*\\* \\(`~/.codex/config.toml`\\)\n\n```toml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no Codex configuration")
	}
	fw := regexp.MustCompile(`(?m)^env_vars = \[(.*)\]$`).FindSubmatch(m[1])
	if fw == nil {
		t.Fatalf("the Codex configuration forwards no environment:\n%s", m[1])
	}
	root := t.TempDir()
	full := isolatedEnv(t, root)
	// What Codex passes: a few basics, and the variables env_vars names.
	var env []string
	for _, kv := range full {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || strings.Contains(string(fw[1]), `"`+k+`"`) {
			env = append(env, kv)
		}
	}
	repo := filepath.Join(root, "project")
	initRepo(t, full, repo, map[string]string{"README.md": "# p\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := startDurable(t, ctx, airlockBinary(t), env, repo)
	d.w.call("git_status", nil)
	sockets := filepath.Join(root, "run", "airlock")
	where := "reviewers find this server in " + sockets + " (ledger: " + filepath.Join(root, "state", "airlock", "ledger.jsonl") + ")"
	mustContain(t, "serve's start", d.stderr.Await(where), where)
	entries, _ := os.ReadDir(sockets)
	found := false
	for _, e := range entries {
		found = found || e.Type()&os.ModeSocket != 0
	}
	if !found {
		t.Errorf("no server socket in %s, where airlock review looks: %v", sockets, entries)
	}
}
