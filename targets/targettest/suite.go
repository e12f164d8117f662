package targettest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// File is one entry of a tree: content, or a symlink's target.
type File struct {
	Data       string
	Executable bool
	Symlink    bool
}

// Inspector looks at a target from outside, as a person with git would.
type Inspector interface {
	// Commit makes a commit on branch (creating it) with exactly files,
	// on top of the branch's current commit, and returns it.
	Commit(t testing.TB, branch string, files map[string]File) plumbing.Hash
	// Head returns the branch's commit, or zero.
	Head(t testing.TB, branch string) plumbing.Hash
	// Tree returns the files of a commit.
	Tree(t testing.TB, commit plumbing.Hash) map[string]File
	// Fsck runs git fsck --strict on the target's repository.
	Fsck(t testing.TB)
}

// Harness is one kind of target.
type Harness struct {
	// New returns a fresh target over an empty repository, and its
	// inspector.
	New func(t *testing.T) (targets.Target, Inspector)
	// Branch is the branch the suite pushes to; "" means "main".
	Branch string
	// Check, when set, is called after every successful push with the
	// files the branch now holds (a working-tree target checks its files).
	Check func(t testing.TB, want map[string]File)
	// Short skips the biggest cases (a 50 MB file, 10,000 files), for
	// targets that are slow by nature.
	Short bool
	// Skip names cases to skip (as they appear in test names).
	Skip []string
}

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	if h.Branch == "" {
		h.Branch = "main"
	}
	cases := []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"PushNewRef", pushNewRef},
		{"FastForward", fastForward},
		{"TargetMoved", targetMoved},
		{"GrantForSomethingElse", grantForSomethingElse},
		{"PushTwice", pushTwice},
		{"ConcurrentPushes", concurrentPushes},
		{"FetchWholeAndPaths", fetchWholeAndPaths},
		{"NewBranchFromPartialFetch", newBranchFromPartialFetch},
		{"ContentKinds", contentKinds},
		{"Deletions", deletions},
		{"BigFile", bigFile},
		{"ManyFiles", manyFiles},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if h.Short && (c.name == "BigFile" || c.name == "ManyFiles") {
				t.Skip("skipped for this target (Harness.Short)")
			}
			if slices.Contains(h.Skip, c.name) {
				t.Skip("skipped for this target (Harness.Skip)")
			}
			tgt, insp := h.New(t)
			c.fn(t, &suite{h: h, t: t, target: tgt, insp: insp, ref: "refs/heads/" + h.Branch})
		})
	}
}

type suite struct {
	h      Harness
	t      *testing.T
	target targets.Target
	insp   Inspector
	ref    string
}

// sandbox is one worker's side: workspace, store, staging and a gate that
// approves this target's pushes (recorded in a ledger like any other).
type sandbox struct {
	ws    *memfs.Workspace
	store *staging.Store
	area  *staging.Area
	gate  *approval.Gate
}

func (s *suite) sandbox() *sandbox {
	t := s.t
	ws, err := memfs.New(memfs.WithLimits(memfs.Limits{MaxFileBytes: 64 << 20, MaxTotalBytes: 2 << 30}))
	if err != nil {
		t.Fatal(err)
	}
	store := staging.NewStore(4 << 30)
	clock := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	area, err := staging.New(ws, store, staging.Config{
		Author: staging.Signature{Name: "Suite Worker", Email: "suite@example.com"},
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(time.Second)
			return clock
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, approval.Policy{AutoApprove: []string{s.target.ID()}})
	return &sandbox{ws, store, area, gate}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

// pull seeds the sandbox from the target's branch.
func (s *suite) pull(sb *sandbox, paths []string) plumbing.Hash {
	t := s.t
	head, err := s.target.Fetch(ctx(t), s.ref, paths, sb.store)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	refused, err := sb.area.SeedFrom(head, paths)
	if err != nil || len(refused) > 0 {
		t.Fatalf("seed: %v %v", err, refused)
	}
	return head
}

// write puts files into the workspace.
func write(t testing.TB, ws *memfs.Workspace, files map[string]File) {
	t.Helper()
	for p, f := range files {
		if f.Symlink {
			ws.Remove(p)
			if err := ws.Symlink(f.Data, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := ws.WriteFile(p, []byte(f.Data), 0o644); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if f.Executable {
			mode = 0o755
		}
		if err := ws.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// grant gets an approval for pushing commit new to the target's ref,
// which holds old.
func (s *suite) grant(sb *sandbox, target, ref string, old, new plumbing.Hash) approval.Grant {
	t := s.t
	req := &approval.Request{Worker: "suite", Target: target, Ref: ref, Old: old, New: new, Tree: new, NewRef: old.IsZero()}
	gate := sb.gate
	if target != s.target.ID() {
		l, _ := ledger.Open(filepath.Join(t.TempDir(), "other.jsonl"))
		t.Cleanup(func() { l.Close() })
		gate = approval.NewGate(l, approval.Policy{AutoApprove: []string{target}})
	}
	tk, err := gate.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, g, err := tk.Wait(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// stageAndPush stages everything, pushes it over old, and checks that the
// target holds exactly the staged commit.
func (s *suite) stageAndPush(sb *sandbox, old plumbing.Hash, msg string) plumbing.Hash {
	t := s.t
	t.Helper()
	c, err := sb.area.Stage(nil, msg)
	if err != nil {
		t.Fatalf("stage: %v", err)
	}
	if err := s.target.Push(ctx(t), s.grant(sb, s.target.ID(), s.ref, old, c.ID), sb.store); err != nil {
		t.Fatalf("push: %v", err)
	}
	if head := s.insp.Head(t, s.h.Branch); head != c.ID {
		t.Fatalf("after the push the branch is at %s, not the staged commit %s", head, c.ID)
	}
	s.insp.Fsck(t)
	if s.h.Check != nil {
		s.h.Check(t, s.insp.Tree(t, c.ID))
	}
	return c.ID
}

func (s *suite) expectTree(commit plumbing.Hash, want map[string]File) {
	t := s.t
	t.Helper()
	got := s.insp.Tree(t, commit)
	if len(got) != len(want) {
		t.Errorf("the target's tree has %d entries, want %d", len(got), len(want))
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("%s: target has %+v (present %v), want %+v", p, short(g), ok, short(w))
		}
	}
}

func short(f File) File {
	if len(f.Data) > 60 {
		f.Data = fmt.Sprintf("%s... (%d bytes)", f.Data[:40], len(f.Data))
	}
	return f
}

func pushNewRef(t *testing.T, s *suite) {
	sb := s.sandbox()
	files := map[string]File{"README.md": {Data: "# new\n"}, "src/main.go": {Data: "package main\n"}}
	write(t, sb.ws, files)
	id := s.stageAndPush(sb, plumbing.ZeroHash, "First commit")
	s.expectTree(id, files)
}

func fastForward(t *testing.T, s *suite) {
	base := s.insp.Commit(t, s.h.Branch, map[string]File{"a.txt": {Data: "a\n"}, "keep/k.txt": {Data: "k\n"}})
	sb := s.sandbox()
	if got := s.pull(sb, nil); got != base {
		t.Fatalf("fetched %s, want %s", got, base)
	}
	write(t, sb.ws, map[string]File{"a.txt": {Data: "a2\n"}, "b.txt": {Data: "b\n"}})
	id := s.stageAndPush(sb, base, "Edit")
	s.expectTree(id, map[string]File{"a.txt": {Data: "a2\n"}, "b.txt": {Data: "b\n"}, "keep/k.txt": {Data: "k\n"}})
	// A second push on top of the first.
	write(t, sb.ws, map[string]File{"c.txt": {Data: "c\n"}})
	id2 := s.stageAndPush(sb, id, "More")
	if s.insp.Tree(t, id2)["c.txt"].Data != "c\n" {
		t.Error("the second push is missing c.txt")
	}
}

func targetMoved(t *testing.T, s *suite) {
	base := s.insp.Commit(t, s.h.Branch, map[string]File{"a.txt": {Data: "a\n"}})
	sb := s.sandbox()
	s.pull(sb, nil)
	write(t, sb.ws, map[string]File{"b.txt": {Data: "mine\n"}})
	c, err := sb.area.Stage(nil, "Mine")
	if err != nil {
		t.Fatal(err)
	}
	g := s.grant(sb, s.target.ID(), s.ref, base, c.ID)
	moved := s.insp.Commit(t, s.h.Branch, map[string]File{"a.txt": {Data: "a\n"}, "theirs.txt": {Data: "theirs\n"}})
	err = s.target.Push(ctx(t), g, sb.store)
	if !errors.Is(err, targets.ErrTargetMoved) {
		t.Fatalf("push over a moved target: %v, want ErrTargetMoved", err)
	}
	if head := s.insp.Head(t, s.h.Branch); head != moved {
		t.Fatalf("a refused push moved the branch to %s", head)
	}
	s.insp.Fsck(t)
}

func grantForSomethingElse(t *testing.T, s *suite) {
	base := s.insp.Commit(t, s.h.Branch, map[string]File{"a.txt": {Data: "a\n"}})
	sb := s.sandbox()
	s.pull(sb, nil)
	write(t, sb.ws, map[string]File{"b.txt": {Data: "b\n"}})
	c, err := sb.area.Stage(nil, "B")
	if err != nil {
		t.Fatal(err)
	}
	other := plumbing.ComputeHash(plumbing.CommitObject, []byte("another commit"))
	grants := map[string]approval.Grant{
		"zero grant":     {},
		"another target": s.grant(sb, "local:/somewhere/else", s.ref, base, c.ID),
		"another ref":    s.grant(sb, s.target.ID(), "refs/heads/other", base, c.ID),
		"another commit": s.grant(sb, s.target.ID(), s.ref, base, other),
		"another base":   s.grant(sb, s.target.ID(), s.ref, other, c.ID),
	}
	for name, g := range grants {
		if err := s.target.Push(ctx(t), g, sb.store); err == nil {
			t.Errorf("%s: the push went through", name)
		}
		if head := s.insp.Head(t, s.h.Branch); head != base {
			t.Fatalf("%s: a refused push moved the branch", name)
		}
	}
}

func pushTwice(t *testing.T, s *suite) {
	sb := s.sandbox()
	write(t, sb.ws, map[string]File{"a.txt": {Data: "a\n"}})
	c, err := sb.area.Stage(nil, "A")
	if err != nil {
		t.Fatal(err)
	}
	g := s.grant(sb, s.target.ID(), s.ref, plumbing.ZeroHash, c.ID)
	for i := 0; i < 2; i++ {
		if err := s.target.Push(ctx(t), g, sb.store); err != nil {
			t.Fatalf("push %d: %v", i+1, err)
		}
		if head := s.insp.Head(t, s.h.Branch); head != c.ID {
			t.Fatalf("push %d: branch at %s", i+1, head)
		}
	}
	s.insp.Fsck(t)
}

// Eight sandboxes push to one ref at once, round after round: exactly one
// wins each round, the others are told the target moved.
func concurrentPushes(t *testing.T, s *suite) {
	base := s.insp.Commit(t, s.h.Branch, map[string]File{"a.txt": {Data: "a\n"}})
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		results := make([]error, 8)
		ids := make([]plumbing.Hash, 8)
		grants := make([]approval.Grant, 8)
		sbs := make([]*sandbox, 8)
		for i := range sbs {
			sb := s.sandbox()
			if got := s.pull(sb, nil); got != base {
				t.Fatalf("round %d: fetched %s, want %s", round, got, base)
			}
			write(t, sb.ws, map[string]File{fmt.Sprintf("r%d-w%d.txt", round, i): {Data: fmt.Sprint(round, i)}})
			c, err := sb.area.Stage(nil, fmt.Sprintf("round %d worker %d", round, i))
			if err != nil {
				t.Fatal(err)
			}
			sbs[i], ids[i], grants[i] = sb, c.ID, s.grant(sb, s.target.ID(), s.ref, base, c.ID)
		}
		for i := range sbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.target.Push(ctx(t), grants[i], sbs[i].store)
			}()
		}
		wg.Wait()
		head := s.insp.Head(t, s.h.Branch)
		winners := 0
		for i, err := range results {
			switch {
			case err == nil:
				winners++
				if ids[i] != head {
					t.Errorf("round %d: worker %d succeeded but the branch is at %s", round, i, head)
				}
			case !errors.Is(err, targets.ErrTargetMoved):
				t.Errorf("round %d: worker %d: %v, want ErrTargetMoved", round, i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d pushes succeeded, want exactly 1", round, winners)
		}
		s.insp.Fsck(t)
		base = head
	}
}

func fetchWholeAndPaths(t *testing.T, s *suite) {
	files := map[string]File{
		"README.md": {Data: "r\n"}, "templates/a.md": {Data: "a\n"}, "templates/sub/b.md": {Data: "b\n"},
		"src/x.go": {Data: "x\n"}, "run.sh": {Data: "#!/bin/sh\n", Executable: true}, "link": {Data: "README.md", Symlink: true},
	}
	head := s.insp.Commit(t, s.h.Branch, files)
	for _, paths := range [][]string{nil, {"templates/", "run.sh"}} {
		sb := s.sandbox()
		if got := s.pull(sb, paths); got != head {
			t.Fatalf("fetched %s, want %s", got, head)
		}
		for p, f := range files {
			in := paths == nil || p == "run.sh" || strings.HasPrefix(p, "templates/")
			fi, err := sb.ws.Lstat(p)
			if !in {
				if err == nil {
					t.Errorf("paths %v: %s was brought in", paths, p)
				}
				continue
			}
			if err != nil {
				t.Errorf("paths %v: %s is missing: %v", paths, p, err)
				continue
			}
			if f.Symlink {
				if got, _ := sb.ws.Readlink(p); got != f.Data {
					t.Errorf("%s -> %q", p, got)
				}
				continue
			}
			got, _ := sb.ws.ReadFile(p)
			if string(got) != f.Data || (fi.Mode()&0o100 != 0) != f.Executable {
				t.Errorf("%s = %q mode %v", p, got, fi.Mode())
			}
		}
		// Staging on top of a partial pull keeps what was not pulled.
		write(t, sb.ws, map[string]File{"templates/c.md": {Data: "c\n"}})
		c, err := sb.area.Stage(nil, "add c")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]File{"templates/c.md": {Data: "c\n"}}
		for p, f := range files {
			want[p] = f
		}
		if len(paths) > 0 {
			if err := s.target.Push(ctx(t), s.grant(sb, s.target.ID(), s.ref, head, c.ID), sb.store); err != nil {
				t.Fatal(err)
			}
			s.expectTree(c.ID, want)
			s.insp.Fsck(t)
		}
	}
}

// A new branch forked from a branch the sandbox fetched only some paths
// of: the target already holds the fork point and everything in it, so
// the push sends only the new commit (the sandbox has nothing else).
func newBranchFromPartialFetch(t *testing.T, s *suite) {
	files := map[string]File{"README.md": {Data: "r\n"}, "templates/a.md": {Data: "a\n"}, "src/x.go": {Data: "x\n"}}
	head := s.insp.Commit(t, s.h.Branch, files)
	sb := s.sandbox()
	s.pull(sb, []string{"templates/"})
	write(t, sb.ws, map[string]File{"templates/b.md": {Data: "b\n"}})
	c, err := sb.area.Stage(nil, "fork")
	if err != nil {
		t.Fatal(err)
	}
	fork := s.h.Branch + "-fork"
	if err := s.target.Push(ctx(t), s.grant(sb, s.target.ID(), "refs/heads/"+fork, plumbing.ZeroHash, c.ID), sb.store); err != nil {
		t.Fatalf("push to a new branch: %v", err)
	}
	if got := s.insp.Head(t, fork); got != c.ID {
		t.Fatalf("%s is at %s, want %s", fork, got, c.ID)
	}
	if got := s.insp.Head(t, s.h.Branch); got != head {
		t.Errorf("%s moved to %s", s.h.Branch, got)
	}
	want := map[string]File{"templates/b.md": {Data: "b\n"}}
	for p, f := range files {
		want[p] = f
	}
	s.expectTree(c.ID, want)
	s.insp.Fsck(t)
}

func contentKinds(t *testing.T, s *suite) {
	sb := s.sandbox()
	files := map[string]File{
		"caf\u00e9/\u65e5\u672c\u8a9e.md": {Data: "unicode \u2603\n"},
		"sp ace/quo\"te.txt":              {Data: "odd names\n"},
		"bin/data.bin":                    {Data: "\x00\x01\x02\xff\xfe binary \x00"},
		"bin/run.sh":                      {Data: "#!/bin/sh\necho hi\n", Executable: true},
		"docs/link":                       {Data: "../bin/run.sh", Symlink: true},
		"empty.txt":                       {Data: ""},
		"crlf.txt":                        {Data: "a\r\nb\r\n"},
		"no-newline.txt":                  {Data: "end"},
	}
	write(t, sb.ws, files)
	id := s.stageAndPush(sb, plumbing.ZeroHash, "Content of every kind")
	s.expectTree(id, files)
}

func deletions(t *testing.T, s *suite) {
	base := s.insp.Commit(t, s.h.Branch, map[string]File{
		"a.txt": {Data: "a\n"}, "dir/b.txt": {Data: "b\n"}, "dir/c.txt": {Data: "c\n"}, "x": {Data: "file\n"},
	})
	sb := s.sandbox()
	s.pull(sb, nil)
	if err := sb.ws.RemoveAll("dir"); err != nil {
		t.Fatal(err)
	}
	if err := sb.ws.Remove("x"); err != nil {
		t.Fatal(err)
	}
	write(t, sb.ws, map[string]File{"x/now-a-dir.txt": {Data: "d\n"}})
	id := s.stageAndPush(sb, base, "Delete and replace")
	s.expectTree(id, map[string]File{"a.txt": {Data: "a\n"}, "x/now-a-dir.txt": {Data: "d\n"}})
}

func bigFile(t *testing.T, s *suite) {
	sb := s.sandbox()
	big := make([]byte, 50<<20)
	for i := range big {
		big[i] = byte('a' + i%26)
		if i%100 == 99 {
			big[i] = '\n'
		}
	}
	write(t, sb.ws, map[string]File{"big.txt": {Data: string(big)}})
	id := s.stageAndPush(sb, plumbing.ZeroHash, "A 50 MB file")
	if got := s.insp.Tree(t, id)["big.txt"].Data; got != string(big) {
		t.Errorf("the target's big.txt is %d bytes and differs", len(got))
	}
}

func manyFiles(t *testing.T, s *suite) {
	sb := s.sandbox()
	files := map[string]File{}
	for i := 0; i < 10_000; i++ {
		files[fmt.Sprintf("d%02d/f%05d.txt", i%100, i)] = File{Data: fmt.Sprintf("file %d\n", i)}
	}
	write(t, sb.ws, files)
	id := s.stageAndPush(sb, plumbing.ZeroHash, "10,000 files")
	if got := s.insp.Tree(t, id); len(got) != 10_000 || got["d42/f04242.txt"].Data != "file 4242\n" {
		t.Errorf("the target holds %d files", len(got))
	}
}
