package memfs_test

import (
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// go-git works on the billy view directly: add, commit, and a checkout that
// rewrites the workspace.
func TestGoGitWorksOnBillyView(t *testing.T) {
	w := newWorkspace(t)
	repo, err := git.Init(memory.NewStorage(), w.Billy())
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1_700_000_000, 0)}
	commit := func(msg string) {
		t.Helper()
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Commit(msg, &git.CommitOptions{Author: sig}); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, w, "README.md", "v1\n")
	mustWrite(t, w, "src/main.go", "package main\n")
	commit("first")
	first, _ := repo.Head()
	mustWrite(t, w, "README.md", "v2\n")
	must(t, w.Remove("src/main.go"))
	mustWrite(t, w, "NEW.md", "new\n")
	commit("second")

	if err := wt.Checkout(&git.CheckoutOptions{Hash: first.Hash(), Force: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.ReadFile("README.md"); string(got) != "v1\n" {
		t.Errorf("README.md after checkout = %q", got)
	}
	if got, _ := w.ReadFile("src/main.go"); string(got) != "package main\n" {
		t.Errorf("src/main.go after checkout = %q", got)
	}
	if _, err := w.Stat("NEW.md"); err == nil {
		t.Error("NEW.md, tracked only by the second commit, survived the checkout")
	}
	st, err := wt.Status()
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsClean() {
		t.Errorf("status after checkout:\n%s", st)
	}
}
