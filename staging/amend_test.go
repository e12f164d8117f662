package staging_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/staging"
)

// Issue 32: a rejected commit stayed staged under its fix, so both landed
// and the rejected content stayed in the target's history. Amend replaces
// the latest staged commit in place: the rejected content is in no commit
// the chain holds, the new commit says which it replaced, and what was
// staged and not named stays as it was.
func TestAmendReplacesTheLatestCommit(t *testing.T) {
	e := newEnv(t)
	e.write(t, "keep.txt", "keep")
	ca, err := e.area.Stage(nil, "Keep")
	must(t, err)
	e.write(t, "bad.txt", "REJECTED CONTENT")
	e.write(t, "other.txt", "other")
	cb, err := e.area.Stage(nil, "Add bad and other\n\nWith a body.")
	must(t, err)
	e.write(t, "bad.txt", "fixed")
	e.write(t, "notyet.txt", "later")
	rep, err := e.area.Amend([]string{"bad.txt"}, "")
	must(t, err)
	c := rep.Commit
	chain := e.area.Commits()
	if len(chain) != 2 || chain[0].ID != ca.ID || chain[1].ID != c.ID || c.Parent != ca.ID {
		t.Fatalf("chain after amend: %+v", chain)
	}
	if c.Message != cb.Message || !slices.Equal(c.Replaces, []plumbing.Hash{cb.ID}) {
		t.Errorf("amended: message %q, replaces %v; want %q, [%s]", c.Message, c.Replaces, cb.Message, cb.ID)
	}
	if !c.Author.When.Equal(cb.Author.When) {
		t.Errorf("the author date changed: %v, was %v", c.Author.When, cb.Author.When)
	}
	repo := newRepo(t)
	export(t, e.store, repo, c.ID)
	fsck(t, repo)
	if got := run(t, repo, "show", "main:bad.txt"); got != "fixed" {
		t.Errorf("bad.txt = %q", got)
	}
	if got := run(t, repo, "show", "main:other.txt"); got != "other" {
		t.Errorf("other.txt = %q", got)
	}
	if got := run(t, repo, "log", "-p", "main"); strings.Contains(got, "REJECTED CONTENT") {
		t.Errorf("the rejected content is in the history:\n%s", got)
	}
	st := e.area.Status()
	if len(st.Unstaged) != 1 || st.Unstaged[0].Path != "notyet.txt" {
		t.Errorf("unstaged after amend: %+v; want notyet.txt alone", st.Unstaged)
	}

	// A message alone, nothing unstaged named: the tree stays.
	e.ws.Remove("notyet.txt")
	rep2, err := e.area.Amend(nil, "Add fixed and other")
	must(t, err)
	if rep2.Commit.Tree != c.Tree || rep2.Commit.Message != "Add fixed and other\n" || !slices.Equal(rep2.Commit.Replaces, []plumbing.Hash{c.ID, cb.ID}) {
		t.Errorf("message-only amend: %+v", rep2.Commit)
	}
}

// Amend refuses, changing nothing, with nothing staged, and when the
// result would change nothing (it names git_discard instead).
func TestAmendRefusals(t *testing.T) {
	e := newEnv(t)
	if _, err := e.area.Amend(nil, "x"); !errors.Is(err, staging.ErrNothingToAmend) {
		t.Errorf("amend with nothing staged: %v", err)
	}
	e.write(t, "a.txt", "a")
	ca, err := e.area.Stage(nil, "A")
	must(t, err)
	must(t, e.ws.Remove("a.txt"))
	_, err = e.area.Amend(nil, "")
	if !errors.Is(err, staging.ErrNothingToStage) || !strings.Contains(err.Error(), "git_discard commit_id="+ca.ID.String()[:7]) {
		t.Errorf("amend to nothing: %v", err)
	}
	if chain := e.area.Commits(); len(chain) != 1 || chain[0].ID != ca.ID {
		t.Errorf("a refused amend changed the chain: %+v", chain)
	}
	if _, err := e.area.Amend(nil, "\x00"); !errors.Is(err, staging.ErrInvalidMessage) {
		t.Errorf("amend with a bad message: %v", err)
	}
}
