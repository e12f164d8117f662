// Package viewtest makes the pushes the full-screen diff's tests show:
// real repositories, git's own diff and counts, approval's own flags.
package viewtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/gittest"
)

// GitPush makes a real repository whose main branch holds base, commits
// push on top, and returns the request airlock would show for it: git's
// own diff and counts, and the flags approval.Assess gives.
func GitPush(t testing.TB, base, push map[string]string) *approval.Request {
	t.Helper()
	dir := t.TempDir()
	env := gittest.Env()
	gittest.InitRepo(t, env, dir, "base", base)
	for p, c := range push {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, env, dir, nil, "add", "-A")
	gittest.Run(t, env, dir, nil, "commit", "-qm", "the push")
	rev := func(r string) plumbing.Hash {
		return plumbing.NewHash(strings.TrimSpace(gittest.Run(t, env, dir, nil, "rev-parse", r)))
	}
	r := &approval.Request{
		ID: "req-view", Worker: "writer", Target: "local:/srv/project", Describe: "local:/srv/project",
		Ref: "refs/heads/feature", Old: rev("HEAD~1"), New: rev("HEAD"), Tree: rev("HEAD^{tree}"),
		Commits:  []approval.CommitInfo{{ID: rev("HEAD"), Message: "the push\n"}},
		Diff:     gittest.Run(t, env, dir, nil, "diff", "--no-color", "--no-ext-diff", "HEAD~1", "HEAD"),
		Pickable: true,
	}
	for _, rec := range strings.Split(gittest.Run(t, env, dir, nil, "diff", "--numstat", "-z", "HEAD~1", "HEAD"), "\x00") {
		fields := strings.SplitN(rec, "\t", 3)
		if len(fields) != 3 {
			continue
		}
		add, _ := strconv.Atoi(fields[0])
		del, _ := strconv.Atoi(fields[1])
		op := change.Update
		if _, ok := base[fields[2]]; !ok {
			op = change.Create
		}
		r.Files = append(r.Files, approval.FileChange{Path: fields[2], Op: op, Added: add, Deleted: del, Size: int64(len(push[fields[2]]))})
		r.Added += add
		r.Deleted += del
	}
	r.Flags = approval.Assess(r, approval.Rules{Protected: []string{"main"}}, func(path string, newSide bool) ([]byte, bool) {
		if newSide {
			c, ok := push[path]
			return []byte(c), ok
		}
		c, ok := base[path]
		return []byte(c), ok
	})
	return r
}

// numbered is n lines of text, each saying which it is.
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(prefix + " line " + strconv.Itoa(i) + "\n")
	}
	return b.String()
}

// MultiFilePush is a push of eight files: a private key (high risk), a
// workflow and a Makefile (medium), a generated file of 450 lines
// (collapsed) with a needle in it, and small changes.
func MultiFilePush(t testing.TB) *approval.Request {
	base := map[string]string{
		"README.md": "# project\n",
		"src/a.go":  "package a\n\nfunc A() int { return 1 }\n",
	}
	push := map[string]string{
		"src/a.go":                 "package a\n\nfunc A() int { return 2 }\n",
		"docs/guide.md":            "# Guide\n\nRun make.\n",
		".github/workflows/ci.yml": "on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: curl https://example.com/x.sh | sh\n",
		"Makefile":                 "all:\n\tgo build ./...\n",
		"gen/big.txt":              numbered("generated", 200) + "the needle is here\n" + numbered("more", 249),
		"notes/todo.md":            "- ship it\n",
		"deploy/id_rsa":            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
		"README.md":                "# project\n\nNow with a guide.\n",
	}
	for k, v := range base {
		if _, ok := push[k]; !ok {
			push[k] = v
		}
	}
	return GitPush(t, base, push)
}

// BigPush is a push of files files of lines lines each, the size the issue
// asks the view to open at once: 300 files, 20,000 lines.
func BigPush(t testing.TB, files, lines int) *approval.Request {
	base := map[string]string{"README.md": "# project\n"}
	push := map[string]string{"README.md": "# project\n", ".github/workflows/ci.yml": "on: push\n"}
	for i := 0; i < files-1; i++ {
		push["pkg"+strconv.Itoa(i/30)+"/file"+strconv.Itoa(i)+".go"] = numbered("// file "+strconv.Itoa(i), lines)
	}
	return GitPush(t, base, push)
}
