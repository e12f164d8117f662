package session_test

// Adversarial tests: a hostile worker and a hostile concurrent client
// against the session layer (written by an attacking review of issue 11's
// session layer; each named bug failed before its fix). The random ones
// run a few seeds by default and 150 with AIRLOCK_LONG_TESTS.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/worker"
)

// gated is a target whose Push waits until released, and says when it
// entered.
type gated struct {
	targets.Target
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Push(ctx context.Context, gr approval.Grant, store *staging.Store) error {
	g.entered <- struct{}{}
	<-g.release
	return g.Target.Push(ctx, gr, store)
}

func newGated() *gated {
	return &gated{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

// A reviewer picks some files; the target moves before the push; the push
// rebases and asks again (as an approved push does). The retry uses the
// pre-pick commit, which the pick replaced, so it fails.
func TestAdversarialPickThenTargetMoved(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	e.write(t, "b.txt", "b\n")
	_, err := e.s.Stage(nil, "A and B")
	must(t, err)
	done := make(chan struct{})
	var res session.PushResult
	var perr error
	go func() {
		defer close(done)
		res, perr = e.s.Push(context.Background(), "", "", nil)
	}()
	first := waitPending(t, e.gate, 1)[0]
	commitTo(t, r, "other.txt", "someone else\n")
	_, rerr := e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Pick, Paths: []string{"a.txt"}})
	must(t, rerr)
	// The target moved: the push should rebase the picked commit and ask
	// again.
	var second *approval.Request
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && second == nil {
		select {
		case <-done:
			t.Fatalf("the push ended instead of asking again: %+v, %v", res, perr)
		default:
		}
		if p := e.gate.Pending(); len(p) == 1 {
			second = p[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	if second == nil {
		t.Fatal("no second request")
	}
	_, rerr = e.gate.Resolve(approval.Decision{Request: second.ID, Verdict: approval.Approve})
	must(t, rerr)
	<-done
	if perr != nil {
		t.Fatalf("push: %v", perr)
	}
}

// While a picked push is landing, a Discard of the picked commit must
// refuse (the commit is on its way), not drop it and collect its objects
// under the running push.
func TestAdversarialDiscardPickedCommitWhileLanding(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	g := newGated()
	e := newEnv(t, r, config{wrap: func(tt targets.Target) targets.Target { g.Target = tt; return g }})
	e.write(t, "a.txt", strings.Repeat("a", 1000)+"\n")
	e.write(t, "b.txt", "b\n")
	_, err := e.s.Stage(nil, "A and B")
	must(t, err)
	done := make(chan struct{})
	var res session.PushResult
	var perr error
	go func() {
		defer close(done)
		res, perr = e.s.Push(context.Background(), "", "", nil)
	}()
	req := waitPending(t, e.gate, 1)[0]
	_, rerr := e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Paths: []string{"a.txt"}})
	must(t, rerr)
	<-g.entered // landing now
	st := e.s.Status()
	if len(st.Staged) != 1 {
		t.Fatalf("staged %d", len(st.Staged))
	}
	picked := st.Staged[0].ID
	_, derr := e.s.Discard(picked.String(), false)
	close(g.release)
	<-done
	if derr == nil {
		t.Errorf("discarding the picked commit while its push was landing succeeded; the push then answered %+v, %v", res, perr)
	}
}

// A rollback onto a moved base where the checkpoint has a directory and
// upstream put a file at its name (or the reverse) must keep upstream's and
// list a conflict, not fail.
func TestAdversarialRollbackReplayDirBecameFile(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "d/new.txt", "mine\n")
	_, err := e.s.Checkpoint("cp")
	must(t, err)
	must(t, e.s.Workspace().RemoveAll("d"))
	commitTo(t, r, "d", "upstream file\n")
	_, err = e.s.Pull(context.Background(), "", nil, "")
	must(t, err)
	res, err := e.s.Rollback("cp")
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	t.Logf("rollback: %+v", res)
	if b, err := e.s.Workspace().ReadFile("d"); err != nil || string(b) != "upstream file\n" {
		t.Errorf("d = %q, %v; want upstream's file", b, err)
	}
}

func TestAdversarialRollbackReplayFileBecameDir(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "d", "mine\n")
	_, err := e.s.Checkpoint("cp")
	must(t, err)
	must(t, e.s.Workspace().Remove("d"))
	commitFiles(t, r, map[string]string{"d/x.txt": "upstream\n"}, nil)
	_, err = e.s.Pull(context.Background(), "", nil, "")
	must(t, err)
	res, err := e.s.Rollback("cp")
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	t.Logf("rollback: %+v", res)
	if b, err := e.s.Workspace().ReadFile("d/x.txt"); err != nil || string(b) != "upstream\n" {
		t.Errorf("d/x.txt = %q, %v; want upstream's file", b, err)
	}
}

// commitFiles writes (and removes) files on a bare repository's main, as
// someone else would.
func commitFiles(t testing.TB, bare string, files map[string]string, remove []string) string {
	t.Helper()
	wt := t.TempDir()
	git(t, wt, "clone", "-q", bare, ".")
	for _, p := range remove {
		git(t, wt, "rm", "-rq", p)
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(wt, p)), 0o755)
		must(t, os.WriteFile(filepath.Join(wt, p), []byte(c), 0o644))
	}
	git(t, wt, "add", "-A")
	git(t, wt, "commit", "-qm", "upstream")
	git(t, wt, "push", "-q", "origin", "main")
	return strings.TrimSpace(git(t, bare, "rev-parse", "main"))
}

// Two staged commits, each pushed to the same branch, both waiting. The
// first is approved and lands; then the second is approved: its request
// compared with the old head, so the target "moved" (to the first), and the
// push should rebase (nothing to do) and ask again, or simply land.
func TestAdversarialTwoPushesOfOneChain(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	c1, err := e.s.Stage(nil, "A")
	must(t, err)
	e.write(t, "b.txt", "b\n")
	c2, err := e.s.Stage(nil, "B")
	must(t, err)
	type out struct {
		res session.PushResult
		err error
	}
	d1, d2 := make(chan out, 1), make(chan out, 1)
	go func() {
		res, err := e.s.Push(context.Background(), c1.ID.String(), "", nil)
		d1 <- out{res, err}
	}()
	waitPending(t, e.gate, 1)
	go func() {
		res, err := e.s.Push(context.Background(), c2.ID.String(), "", nil)
		d2 <- out{res, err}
	}()
	reqs := waitPending(t, e.gate, 2)
	var r1, r2 *approval.Request
	for _, q := range reqs {
		if q.New == c1.ID {
			r1 = q
		} else {
			r2 = q
		}
	}
	_, err = e.gate.Resolve(approval.Decision{Request: r1.ID, Verdict: approval.Approve})
	must(t, err)
	if o := <-d1; o.err != nil {
		t.Fatalf("first push: %v", o.err)
	}
	// Issue 24: c1 landed on the branch r2 waits on, so r2 is asked again
	// against the new head (its base line and diff current).
	again := waitPending(t, e.gate, 1)[0]
	if again.ID == r2.ID || again.Old != c1.ID || again.New != c2.ID || again.Since == nil || again.Since.Request != r2.ID || again.Since.Why != "the target moved" {
		t.Fatalf("after c1 landed, the waiting request is %+v (since %+v); want c2 asked again over c1", again, again.Since)
	}
	_, err = e.gate.Resolve(approval.Decision{Request: again.ID, Verdict: approval.Approve})
	must(t, err)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case o := <-d2:
			if o.err != nil {
				t.Fatalf("second push: %v", o.err)
			}
			if got := strings.TrimSpace(git(t, r, "rev-parse", "main")); got != c2.ID.String() {
				t.Errorf("main at %s, want %s", got, c2.ID)
			}
			return
		case <-deadline:
			t.Fatal("second push never ended")
		case <-time.After(20 * time.Millisecond):
			for _, q := range e.gate.Pending() {
				e.gate.Resolve(approval.Decision{Request: q.ID, Verdict: approval.Approve})
			}
		}
	}
}

// Random single-threaded operations: after each, the held tally must never
// undercount what is really held.
func TestAdversarialHeldTallyRandom(t *testing.T) {
	n := int64(4)
	if longTests {
		n = 150
	}
	for seed := int64(1); seed <= n; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			r := repo(t, true, map[string]string{"README.md": "# p\n", "d/x.txt": "x\n"})
			e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
			ws := e.s.Workspace()
			paths := []string{"a.txt", "b.txt", "d/x.txt", "d/y.txt", "d", "e/f/g.txt", "e"}
			var log []string
			for i := 0; i < 60; i++ {
				p := paths[rng.Intn(len(paths))]
				var op string
				var err error
				switch rng.Intn(12) {
				case 0, 1, 2:
					op = "write " + p
					err = ws.WriteFile(p, []byte(strings.Repeat(fmt.Sprint(i), 100+rng.Intn(3000))), 0o644)
				case 3:
					op = "removeall " + p
					err = ws.RemoveAll(p)
				case 4:
					op = "stage"
					_, err = e.s.Stage(nil, "s")
				case 5:
					op = "checkpoint"
					_, err = e.s.Checkpoint("")
				case 6:
					op = "rollback"
					_, err = e.s.Rollback("")
				case 7:
					op = "discard"
					st := e.s.Status()
					if len(st.Staged) > 0 {
						_, err = e.s.Discard(st.Staged[rng.Intn(len(st.Staged))].ID.String(), false)
					}
				case 8:
					op = "push"
					_, err = e.s.Push(context.Background(), "", "", nil)
				case 9:
					op = "upstream+pull"
					commitFiles(t, r, map[string]string{fmt.Sprintf("up%d.txt", i): strings.Repeat("u", 500)}, nil)
					_, err = e.s.Pull(context.Background(), "", nil, "")
				case 10:
					op = "delete checkpoint"
					if cps := ws.Checkpoints(); len(cps) > 0 {
						err = ws.DeleteCheckpoint(cps[rng.Intn(len(cps))].Name)
					}
				case 11:
					op = "discard all"
					_, err = e.s.Discard("", true)
				}
				log = append(log, fmt.Sprintf("%s: %v", op, err))
				_, held := ws.Usage()
				_, exact := ws.ExactUsage()
				if held.Bytes < exact.Bytes || held.Files < exact.Files || held.Dirs < exact.Dirs {
					t.Fatalf("after %d ops the held tally %+v undercounts the exact %+v:\n%s", i+1, held, exact, strings.Join(log, "\n"))
				}
			}
		})
	}
}

// Random operations with dir<->file changes; after each, every staged
// commit's diff and the unstaged diff must still be readable (collection
// kept what they need), and the target must pass git fsck --strict.
func TestAdversarialIntegrityRandom(t *testing.T) {
	n := int64(4)
	if longTests {
		n = 150
	}
	for seed := int64(1); seed <= n; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			r := repo(t, true, map[string]string{"README.md": "# p\n", "d/x.txt": "x\n", "k": "file k\n"})
			e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
			ws := e.s.Workspace()
			paths := []string{"a.txt", "d/x.txt", "d/y.txt", "d", "k", "k/z.txt", "e/f/g.txt", "e", "e/f"}
			var log []string
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("%s\nops:\n%s", fmt.Sprintf(format, args...), strings.Join(log, "\n"))
			}
			for i := 0; i < 50; i++ {
				p := paths[rng.Intn(len(paths))]
				var op string
				var err error
				switch rng.Intn(14) {
				case 0, 1, 2:
					op = "write " + p
					if err = ws.WriteFile(p, []byte(fmt.Sprintf("%d %s\n", i, p)), 0o644); err != nil {
						// make room: remove what is in the way, then write
						ws.RemoveAll(p)
						if dir := filepath.Dir(p); dir != "." {
							if fi, serr := ws.Lstat(dir); serr == nil && !fi.IsDir() {
								ws.Remove(dir)
							}
						}
						err = ws.WriteFile(p, []byte(fmt.Sprintf("%d %s\n", i, p)), 0o644)
						op += " (after clearing)"
					}
				case 3:
					op = "removeall " + p
					err = ws.RemoveAll(p)
				case 4, 5:
					op = "stage"
					_, err = e.s.Stage(nil, "s")
				case 6:
					op = "checkpoint"
					_, err = e.s.Checkpoint("")
				case 7:
					op = "rollback"
					var res session.Rolledback
					res, err = e.s.Rollback("")
					op += fmt.Sprintf(" (replayed %v, conflicts %v)", res.Replayed, res.Conflicts)
					if err == nil && !res.Replayed {
						cp, _, cerr := ws.CheckpointSnapshot(res.Name)
						if cerr != nil {
							fail("checkpoint %s gone after rollback: %v", res.Name, cerr)
						}
						if d := cp.Diff(ws.Snapshot()); len(d) > 0 {
							fail("exact rollback to %s differs from it at %v", res.Name, d)
						}
					}
				case 8:
					op = "discard"
					st := e.s.Status()
					if len(st.Staged) > 0 {
						_, err = e.s.Discard(st.Staged[rng.Intn(len(st.Staged))].ID.String(), false)
					}
				case 9, 10:
					op = "push"
					st := e.s.Status()
					if len(st.Staged) > 0 {
						var res session.PushResult
						res, err = e.s.Push(context.Background(), st.Staged[rng.Intn(len(st.Staged))].ID.String(), "", nil)
						if err == nil {
							if head := strings.TrimSpace(git(t, r, "rev-parse", "main")); head != res.Commit.String() {
								fail("push answered %s but main is at %s", res.Commit, head)
							}
							if ns := e.s.Status(); ns.Base != res.Commit {
								fail("after the push of %s the base is %s", res.Commit, ns.Base)
							}
						}
					}
				case 11:
					up := paths[rng.Intn(len(paths))]
					op = "upstream " + up + " + pull"
					files := map[string]string{fmt.Sprintf("up%d.txt", i): "u\n"}
					if rng.Intn(2) == 0 {
						files = map[string]string{up: fmt.Sprintf("upstream %d\n", i)}
					}
					func() {
						defer func() { recover() }()
						commitFilesQuiet(t, r, files)
					}()
					_, err = e.s.Pull(context.Background(), "", nil, "")
				case 12:
					op = "discard all"
					_, err = e.s.Discard("", true)
				case 13:
					op = "collect"
					e.s.Collect()
				}
				log = append(log, fmt.Sprintf("%d %s: %v", i, op, err))
				if err != nil && (strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "lost commit") || errors.Is(err, staging.ErrOutOfSync)) {
					fail("op %s: %v", op, err)
				}
				e.s.Collect()
				st := e.s.Status()
				for _, c := range st.Staged {
					if _, _, err := e.s.Diff(c.ID.String()); err != nil {
						fail("diff of staged %s: %v", c.ID, err)
					}
				}
				if _, _, err := e.s.Diff(""); err != nil {
					fail("unstaged diff: %v", err)
				}
				// the tracked changes must be the full diff of base and live
				if err := checkTracking(ws); err != "" {
					fail("after op %d: %s", i, err)
				}
			}
			if testing.Verbose() && seed == 3 {
				t.Log(strings.Join(log, "\n"))
			}
			if out, err := exec.Command("git", "-C", r, "fsck", "--strict").CombinedOutput(); err != nil {
				fail("git fsck --strict: %v\n%s", err, out)
			}
		})
	}
}

// commitFilesQuiet is commitFiles that tolerates a path in the way (it
// clears it) and a commit with nothing in it.
func commitFilesQuiet(t testing.TB, bare string, files map[string]string) {
	wt := t.TempDir()
	run := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = wt
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@u", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@u")
		return cmd.Run()
	}
	run("clone", "-q", bare, ".")
	for p, c := range files {
		full := filepath.Join(wt, p)
		os.RemoveAll(full)
		for d := filepath.Dir(full); d != wt; d = filepath.Dir(d) {
			if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
				os.Remove(d)
			}
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(c), 0o644)
	}
	run("add", "-A")
	run("commit", "-qm", "upstream")
	run("push", "-q", "origin", "main")
}

func checkTracking(ws *memfs.Workspace) string {
	want := ws.Base().Diff(ws.Snapshot())
	got := ws.Changes()
	var a, b []string
	for _, c := range want {
		a = append(a, c.Path+":"+c.Kind.String())
	}
	for _, c := range got {
		b = append(b, c.Path+":"+c.Kind.String())
	}
	if strings.Join(a, ",") != strings.Join(b, ",") {
		return fmt.Sprintf("Changes() = %v, but the base and the live tree differ at %v", b, a)
	}
	return ""
}

// The plainest case: a checkpoint with no change of the worker's, upstream
// replaces the file k by a directory k/, the worker pulls, and rolls back.
// The replay looks k/z.txt up in the checkpoint's tree, where k is a blob.
func TestAdversarialRollbackAfterPullUpstreamFileToDir(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "k": "file k\n"})
	e := newEnv(t, r, config{})
	_, err := e.s.Checkpoint("cp")
	must(t, err)
	commitFiles(t, r, map[string]string{"k/z.txt": "now a dir\n"}, []string{"k"})
	_, err = e.s.Pull(context.Background(), "", nil, "")
	must(t, err)
	res, err := e.s.Rollback("cp")
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if !res.Replayed {
		t.Errorf("not replayed")
	}
	if b, err := e.s.Workspace().ReadFile("k/z.txt"); err != nil || string(b) != "now a dir\n" {
		t.Errorf("k/z.txt = %q, %v", b, err)
	}
}

// Many goroutines: workers writing, staging, discarding, pulling, pushing,
// checkpointing and rolling back; a reviewer approving, picking, rejecting;
// upstream moving. Under -race; a deadlock shows as the deadline.
func TestAdversarialConcurrentStorm(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "d/x.txt": "x\n"})
	e := newEnv(t, r, config{timeout: 300 * time.Millisecond})
	ws := e.s.Workspace()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errsMu := sync.Mutex{}
	var bad []string
	counts := map[string]int{}
	note := func(op string, err error) {
		errsMu.Lock()
		if err == nil {
			counts[op+" ok"]++
		} else {
			m := err.Error()
			if len(m) > 60 {
				m = m[:60]
			}
			counts[op+" "+m]++
		}
		errsMu.Unlock()
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "lost commit") || errors.Is(err, staging.ErrOutOfSync) {
			errsMu.Lock()
			bad = append(bad, op+": "+err.Error())
			errsMu.Unlock()
		}
	}
	worker := func(id int) {
		defer wg.Done()
		rng := rand.New(rand.NewSource(int64(id)))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := fmt.Sprintf("w%d/f%d.txt", id, rng.Intn(3))
			switch rng.Intn(10) {
			case 0, 1, 2:
				ws.WriteFile(p, []byte(fmt.Sprint(i)), 0o644)
			case 3:
				_, err := e.s.Stage(nil, "s")
				note("stage", err)
			case 4:
				st := e.s.Status()
				if len(st.Staged) > 0 {
					_, err := e.s.Discard(st.Staged[rng.Intn(len(st.Staged))].ID.String(), false)
					note("discard", err)
				}
			case 5:
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.Intn(400))*time.Millisecond)
				_, err := e.s.Push(ctx, "", "", nil)
				cancel()
				note("push", err)
			case 6:
				_, err := e.s.Pull(context.Background(), "", nil, "")
				note("pull", err)
			case 7:
				_, err := e.s.Checkpoint("")
				note("checkpoint", err)
			case 8:
				_, err := e.s.Rollback("")
				if err != nil && !strings.Contains(err.Error(), "replay: ") {
					note("rollback", err)
				}
			case 9:
				st := e.s.Status()
				for _, c := range st.Staged {
					_, _, err := e.s.Diff(c.ID.String())
					if err != nil && !errors.Is(err, staging.ErrNoSuchCommit) {
						note("diff", err)
					}
				}
			}
		}
	}
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go worker(i)
	}
	wg.Add(1)
	go func() { // reviewer
		defer wg.Done()
		rng := rand.New(rand.NewSource(99))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.Intn(30)) * time.Millisecond):
			}
			for _, q := range e.gate.Pending() {
				switch rng.Intn(4) {
				case 0:
					e.gate.Resolve(approval.Decision{Request: q.ID, Verdict: approval.Reject, Reason: "no"})
				case 1:
					if len(q.Files) > 1 {
						e.gate.Resolve(approval.Decision{Request: q.ID, Verdict: approval.Pick, Paths: []string{q.Files[0].Path}})
					}
				default:
					e.gate.Resolve(approval.Decision{Request: q.ID, Verdict: approval.Approve})
				}
			}
		}
	}()
	wg.Add(1)
	go func() { // upstream
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			commitFilesQuiet(t, r, map[string]string{fmt.Sprintf("up/%d.txt", i): "u\n"})
		}
	}()
	time.Sleep(6 * time.Second)
	close(stop)
	finished := make(chan struct{})
	go func() { wg.Wait(); e.s.Close(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("deadlock?\n%s", buf[:n])
	}
	for _, b := range bad {
		t.Error(b)
	}
	if out, err := exec.Command("git", "-C", r, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
	t.Log(pushRecords(t, e.l))
	for k, v := range counts {
		t.Logf("%5d %s", v, k)
	}
}

// newPartialEnv is newEnv with only paths pulled at the start.
func newPartialEnv(t testing.TB, path string, paths ...string) *env {
	t.Helper()
	spec := &worker.TargetSpec{Type: "local-bare", Path: path, Branch: "main"}
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: spec, Targets: map[string]*worker.TargetSpec{},
	}
	for _, p := range paths {
		w.AutoPull = append(w.AutoPull, worker.PullSpec{Path: p, Source: &worker.TargetSpec{Type: "local-bare", Path: path, Branch: "main"}})
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	gate := approval.NewGate(l, approval.Policy{})
	s, err := session.New(context.Background(), w, session.Options{Gate: gate, Timeout: 10 * time.Second})
	must(t, err)
	t.Cleanup(s.Close)
	return &env{s: s, gate: gate, l: l, repo: path}
}

// A checkpoint, then git_pull of more paths of the same base (the base
// commit does not move), then a rollback: the rollback is "exact", so the
// files the pull brought in as part of the base are gone from the
// workspace and show as the worker's deletions, which the next stage
// commits.
func TestAdversarialRollbackAfterPullingMorePaths(t *testing.T) {
	r := repo(t, true, map[string]string{"a.txt": "a\n", "b/b.txt": "b\n"})
	e := newPartialEnv(t, r, "a.txt")
	if _, err := e.s.Workspace().ReadFile("b/b.txt"); err == nil {
		t.Fatal("b/b.txt was pulled at the start")
	}
	_, err := e.s.Checkpoint("cp")
	must(t, err)
	e.write(t, "a.txt", "mine\n")
	res, err := e.s.Pull(context.Background(), "", []string{"b"}, "")
	must(t, err)
	t.Logf("pull: kind %v, more %v", res.Kind, res.More)
	if _, err := e.s.Rollback("cp"); err != nil {
		t.Fatal(err)
	}
	st := e.s.Status()
	for _, c := range st.Unstaged {
		if c.Path == "b/b.txt" {
			t.Errorf("after the rollback b/b.txt, which the pull brought in as part of the base, is an unstaged %s", c.Kind)
		}
	}
	if _, err := e.s.Workspace().ReadFile("b/b.txt"); err != nil {
		t.Errorf("b/b.txt: %v", err)
	}
	if c, err := e.s.Stage(nil, "after the rollback"); err == nil {
		for _, f := range c.Files {
			if f.Path == "b/b.txt" {
				t.Errorf("the next git_stage commits b/b.txt: %s", f.Op)
			}
		}
	}
}

// A directory replaced by a file and a file by a directory, staged, then a
// discard of an earlier commit rebuilds it, then a pick, then pushed to a
// checked-out working tree: the tree must pass git fsck --strict and the
// files on disk must be the commit's.
func TestAdversarialTypeChangesToWorktree(t *testing.T) {
	r := repo(t, false, map[string]string{"README.md": "# p\n", "d/x.txt": "x\n", "f": "f\n"})
	e := newEnv(t, r, config{})
	ws := e.s.Workspace()
	e.write(t, "other.txt", "o\n")
	c0, err := e.s.Stage(nil, "other")
	must(t, err)
	must(t, ws.RemoveAll("d"))
	e.write(t, "d", "now a file\n")
	must(t, ws.Remove("f"))
	e.write(t, "f/y.txt", "now a dir\n")
	e.write(t, "z.txt", "z\n")
	_, err = e.s.Stage(nil, "type changes")
	must(t, err)
	_, err = e.s.Discard(c0.ID.String(), false)
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "", nil)
		done <- err
	}()
	req := waitPending(t, e.gate, 1)[0]
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Paths: []string{"d", "d/x.txt", "f", "f/y.txt"}})
	must(t, err)
	must(t, <-done)
	if out, err := exec.Command("git", "-C", r, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(r, "d")); err != nil || string(b) != "now a file\n" {
		t.Errorf("d on disk: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(r, "f", "y.txt")); err != nil || string(b) != "now a dir\n" {
		t.Errorf("f/y.txt on disk: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(r, "z.txt")); err == nil {
		t.Errorf("z.txt, not picked, is on disk")
	}
	if st := git(t, r, "status", "--porcelain"); st != "" {
		t.Errorf("working tree not clean:\n%s", st)
	}
	stt := e.s.Status()
	var un []string
	for _, c := range stt.Unstaged {
		un = append(un, c.Path)
	}
	if strings.Join(un, ",") != "other.txt,z.txt" {
		t.Errorf("unstaged after the pick: %v", un)
	}
}

// longTests says whether AIRLOCK_LONG_TESTS asks for the long runs (CI
// sets it; the README's command does not).
var longTests = os.Getenv("AIRLOCK_LONG_TESTS") != ""
