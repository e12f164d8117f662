//go:build unix

package session_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/session"
)

// TestStateRemovedUnderTheSessionIsWrittenAgain: a session's journal, its
// directory or the whole state directory removed or replaced under the
// running session, the calls after it still save without error, and a
// crash then loses none of them: the session wrote its state again.
func TestStateRemovedUnderTheSessionIsWrittenAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, root, dir string)
		// byLoop: no call follows the damage; the sync loop notices.
		byLoop bool
	}{
		{name: "journal removed", damage: func(t *testing.T, root, dir string) { must(t, os.Remove(filepath.Join(dir, "journal"))) }},
		{name: "directory removed", damage: func(t *testing.T, root, dir string) { must(t, os.RemoveAll(dir)) }},
		{name: "state directory removed", damage: func(t *testing.T, root, dir string) { must(t, os.RemoveAll(root)) }},
		{name: "state directory removed, no call after", byLoop: true, damage: func(t *testing.T, root, dir string) { must(t, os.RemoveAll(root)) }},
		{name: "journal replaced by an older copy", damage: func(t *testing.T, root, dir string) {
			j := filepath.Join(dir, "journal")
			must(t, os.WriteFile(j+".old", mustRead(t, j+".first"), 0o600))
			must(t, os.Rename(j+".old", j))
		}},
		{name: "directory replaced by an empty one", damage: func(t *testing.T, root, dir string) {
			must(t, os.Rename(dir, dir+".moved"))
			must(t, os.Mkdir(dir, 0o700))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := savedBefore(t)
			ws := d.s.Workspace()
			must(t, os.WriteFile(filepath.Join(dir, "journal.first"), mustRead(t, filepath.Join(dir, "journal")), 0o600))
			must(t, ws.WriteFile("during.txt", []byte("during\n"), 0o644))
			must(t, d.s.Save())

			tc.damage(t, d.root, dir)
			n := 13
			if tc.byLoop {
				n = 0
				session.SyncNow(d.s)
				if _, err := os.Stat(filepath.Join(dir, "journal")); err != nil {
					t.Fatalf("the sync loop did not write the state again: %v", err)
				}
			}
			for i := range n {
				must(t, ws.WriteFile(fmt.Sprintf("after/%02d.txt", i), []byte(fmt.Sprintf("file %d\n", i)), 0o644))
				if err := d.s.Save(); err != nil {
					t.Fatalf("save %d after the state was %s: %v", i, tc.name, err)
				}
			}
			d.crashAndResume(t)
			for _, p := range []string{"a.txt", "before.txt", "during.txt"} {
				if _, err := d.s.Workspace().ReadFile(p); err != nil {
					t.Errorf("%s lost: %v", p, err)
				}
			}
			for i := range n {
				got, err := d.s.Workspace().ReadFile(fmt.Sprintf("after/%02d.txt", i))
				if want := fmt.Sprintf("file %d\n", i); err != nil || string(got) != want {
					t.Errorf("after/%02d.txt: %q, %v; want %q", i, got, err, want)
				}
			}
			// The directory is the session's again: its meta, and a lock
			// another server sees.
			if _, err := session.OpenStateDir(d.root, d.id); !errors.Is(err, session.ErrSessionBusy) {
				t.Errorf("opening the session another server has: %v, want busy", err)
			}
		})
	}
}

// TestStateReplacedByALinkIsRefused: the session's directory moved away
// and a symbolic link to it put in its place while the session runs: the
// next save fails and says so (a call would not answer success), nothing
// is written through the link; its advice, removing the link, makes the
// next save write the whole state again, and a crash then loses nothing.
func TestStateReplacedByALinkIsRefused(t *testing.T) {
	d, dir := savedBefore(t)
	ws := d.s.Workspace()

	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	must(t, os.Rename(dir, elsewhere))
	must(t, os.Symlink(elsewhere, dir))
	must(t, ws.WriteFile("through.txt", []byte("through\n"), 0o644))
	err := d.s.Save()
	if !errors.Is(err, session.ErrNotOwnDir) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "remove the link") {
		t.Fatalf("save with the directory replaced by a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "lock.new")); err == nil {
		t.Fatal("wrote through the link")
	}
	must(t, os.Remove(dir))
	must(t, ws.WriteFile("after.txt", []byte("after\n"), 0o644))
	must(t, d.s.Save())
	d.crashAndResume(t)
	for _, p := range []string{"before.txt", "through.txt", "after.txt"} {
		if _, err := d.s.Workspace().ReadFile(p); err != nil {
			t.Errorf("%s lost: %v", p, err)
		}
	}
}

// TestSymlinkedSessionDirectoryIsNotResumed: a session's directory
// replaced by a link out of the state directory is neither opened (by
// id: --session, a token) nor found as the worker's latest unfinished
// session; the refusal says what is there and what to do, and doing it
// resumes the session.
func TestSymlinkedSessionDirectoryIsNotResumed(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("x.txt", []byte("x\n"), 0o644))
	must(t, d.s.Save())
	session.Crash(d.s)
	d.l.Close()
	d.s = nil

	dir := filepath.Join(d.root, d.id)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	must(t, os.Rename(dir, elsewhere))
	must(t, os.Symlink(elsewhere, dir))
	_, err := session.OpenStateDir(d.root, d.id)
	if !errors.Is(err, session.ErrNotOwnDir) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), elsewhere) {
		t.Fatalf("opening a session whose directory is a link: %v", err)
	}
	if got, _, err := session.LatestUnfinished(session.Local(d.root), "test", session.Binding{}); got != nil || err != nil {
		t.Fatalf("found a session whose directory is a link: %+v, %v", got, err)
	}
	// A link planted for the journal inside a real directory is refused
	// too.
	must(t, os.Remove(dir))
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "meta.json"), mustRead(t, filepath.Join(elsewhere, "meta.json")), 0o600))
	must(t, os.Symlink(filepath.Join(elsewhere, "journal"), filepath.Join(dir, "journal")))
	sd, err := session.OpenStateDir(d.root, d.id)
	must(t, err)
	if _, _, err := session.Resume(t.Context(), d.w, d.options(t, sd)); err == nil {
		t.Fatal("resumed a session through a journal that is a link")
	}
	sd.Unlock()
	// What the message says to do: the directory in the link's place.
	must(t, os.RemoveAll(dir))
	must(t, os.Rename(elsewhere, dir))
	sd, err = session.OpenStateDir(d.root, d.id)
	must(t, err)
	s, _, err := session.Resume(t.Context(), d.w, d.options(t, sd))
	must(t, err)
	d.s = s
	if _, err := s.Workspace().ReadFile("x.txt"); err != nil {
		t.Fatal(err)
	}
}

// savedBefore is a durable session of a.txt pulled and before.txt
// written and saved, and its directory.
func savedBefore(t *testing.T) (*durable, string) {
	t.Helper()
	d := newDurable(t, repo(t, true, map[string]string{"a.txt": "a\n"}), approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("before.txt", []byte("before\n"), 0o644))
	must(t, d.s.Save())
	return d, filepath.Join(d.root, d.id)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	return data
}
