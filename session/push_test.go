package session_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// Issue 11: a commit discarded while its push waits for review used to be
// pushed on approval, and the worker told it failed. Now the discard
// withdraws the request first and says so; nothing reaches the target.
func TestDiscardWithdrawsPendingPush(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	before := strings.TrimSpace(git(t, r, "rev-parse", "main"))
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	c, err := e.s.Stage(nil, "A")
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "", nil)
		done <- err
	}()
	req := waitPending(t, e.gate, 1)[0]
	d, err := e.s.Discard(c.ID.String(), false)
	must(t, err)
	if len(d.Withdrawn) != 1 || d.Withdrawn[0] != req.ID {
		t.Errorf("discard withdrew %v, want [%s]", d.Withdrawn, req.ID)
	}
	if _, err := e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("approving the withdrawn request: %v", err)
	}
	err = <-done
	if !errors.Is(err, approval.ErrWithdrawn) || !strings.Contains(err.Error(), "discarded") {
		t.Errorf("the waiting push answered %v; want it withdrawn because of the discard", err)
	}
	if now := strings.TrimSpace(git(t, r, "rev-parse", "main")); now != before {
		t.Errorf("the target moved to %s", now)
	}
}

// The same commit pushed to two targets at once lands on both, and both
// calls say so (one used to answer "no such staged commit").
func TestSameCommitToTwoTargetsAtOnce(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	// The mirror has the same history, as a fork or a backup would.
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	git(t, t.TempDir(), "clone", "-q", "--bare", r, mirror)
	e := newEnv(t, r, config{targets: map[string]string{"mirror": mirror},
		policy: approval.Policy{AutoApprove: []string{"local-bare:" + r, "local-bare:" + mirror}}})
	e.write(t, "a.txt", "a\n")
	c, err := e.s.Stage(nil, "A")
	must(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, target := range []string{"", "mirror"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.s.Push(context.Background(), c.ID.String(), target, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("push %d: %v", i, err)
		}
	}
	for _, p := range []string{r, mirror} {
		if got := strings.TrimSpace(git(t, p, "rev-parse", "main")); got != c.ID.String() {
			t.Errorf("%s is at %s, want %s", p, got, c.ID)
		}
	}
}

// Two calls pushing one commit to one target are one push: one request,
// one landing, both answered "pushed".
func TestConcurrentPushesOfOneCommitAreOne(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	c, err := e.s.Stage(nil, "A")
	must(t, err)
	var wg, joined sync.WaitGroup
	results := make([]session.PushResult, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Add(1)
		joined.Add(1)
		go func() {
			defer wg.Done()
			// A call reports progress first once it waits on the push:
			// it has joined.
			var once sync.Once
			results[i], errs[i] = e.s.Push(context.Background(), shortid.Hash(c.ID), "", func(float64, float64, string) {
				once.Do(joined.Done)
			})
		}()
	}
	joined.Wait()
	req := waitPending(t, e.gate, 1)[0]
	_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve})
	must(t, err)
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i].Commit != c.ID || results[i].Pending {
			t.Errorf("call %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if n := pushRecords(t, e.l); n[ledger.KindRequest] != 1 || n["pushed"] != 1 || n["failed"] != 0 {
		t.Errorf("ledger %v: want one request and one push", n)
	}
}

// Pushing a commit that already landed answers that it is there, not
// "failed to update ref".
func TestPushAgainAfterItLanded(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
	e.write(t, "a.txt", "a\n")
	c, err := e.s.Stage(nil, "A")
	must(t, err)
	if _, err := e.s.Push(context.Background(), "", "", nil); err != nil {
		t.Fatal(err)
	}
	_, err = e.s.Push(context.Background(), c.ID.String(), "", nil)
	if err == nil || !strings.Contains(err.Error(), "already pushed") || strings.Contains(err.Error(), "failed") {
		t.Errorf("pushing it again: %v", err)
	}
}

// landsThenFails is a target whose push lands and then reports an error,
// as receive-pack does when something fails after the ref moved.
type landsThenFails struct{ targets.Target }

func (l landsThenFails) Push(ctx context.Context, g approval.Grant, store *staging.Store) error {
	if err := l.Target.Push(ctx, g, store); err != nil {
		return err
	}
	return errors.New("remote: post-update hook exited 1")
}

// A push that landed is always recorded as pushed and the sandbox
// advances, whatever the target said after the branch moved.
func TestLandedPushIsPushedWhateverTheTargetSaysAfter(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}},
		wrap: func(t targets.Target) targets.Target { return landsThenFails{t} }})
	e.write(t, "a.txt", "a\n")
	c, err := e.s.Stage(nil, "A")
	must(t, err)
	res, err := e.s.Push(context.Background(), "", "", nil)
	if err != nil || res.Commit != c.ID {
		t.Fatalf("push: %+v, %v", res, err)
	}
	if st := e.s.Status(); st.Base != c.ID || len(st.Staged) != 0 {
		t.Errorf("the sandbox did not advance: base %s, %d staged", st.Base, len(st.Staged))
	}
	if n := pushRecords(t, e.l); n["pushed"] != 1 || n["failed"] != 0 {
		t.Errorf("ledger %v: want the push recorded as pushed", n)
	}
}

// earlierPushLeftBehind is a target that, asked to push, reports what a
// local target's recovery reports when an earlier, interrupted push (to
// another commit) could not be finished: a WorktreeError naming that
// push. Nothing of this push moves.
type earlierPushLeftBehind struct{ targets.Target }

func (e earlierPushLeftBehind) Push(ctx context.Context, g approval.Grant, store *staging.Store) error {
	earlier := plumbing.NewHash("1111111111111111111111111111111111111111")
	return fmt.Errorf("finishing an earlier, interrupted airlock push first: %w; nothing was pushed this time: push again",
		&targets.WorktreeError{Ref: g.Ref(), Worktree: "/wt", Old: g.Old(), New: earlier, Err: errors.New("a FIFO in the way")})
}

// A WorktreeError says the push it names landed, and no other: one an
// earlier push left, met while recovering before this push started, is
// not this push's landing. The push is recorded as failed and the sandbox
// does not advance.
func TestAnEarlierPushsWorktreeErrorIsNotThisPushs(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}},
		wrap: func(t targets.Target) targets.Target { return earlierPushLeftBehind{t} }})
	e.write(t, "a.txt", "a\n")
	c, err := e.s.Stage(nil, "A")
	must(t, err)
	res, err := e.s.Push(context.Background(), "", "", nil)
	if err == nil || !errors.Is(err, targets.ErrWorktreeNotUpdated) {
		t.Fatalf("push: %+v, %v; want the earlier push's error", res, err)
	}
	if st := e.s.Status(); st.Base == c.ID || len(st.Staged) != 1 {
		t.Errorf("the sandbox advanced past a push that did not land: base %s, %d staged", st.Base, len(st.Staged))
	}
	if n := pushRecords(t, e.l); n["pushed"] != 0 || n["failed"] != 1 {
		t.Errorf("ledger %v: want the push recorded as failed", n)
	}
}

// A target that moves between the request and the push: the same call
// rebases onto it and, the reviewer's approval covering the same changes
// on the new commit, lands without asking again (the ledger says on which
// approval), and without a message sending the worker to a tool that does
// not exist.
func TestMovedTargetRebasesOnTheApproval(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	_, err := e.s.Stage(nil, "A")
	must(t, err)
	done := make(chan struct{})
	var res session.PushResult
	go func() {
		defer close(done)
		res, err = e.s.Push(context.Background(), "", "", nil)
	}()
	first := waitPending(t, e.gate, 1)[0]
	commitTo(t, r, "other.txt", "someone else\n")
	_, rerr := e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Approve})
	must(t, rerr)
	<-done
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if n := len(e.gate.Pending()); n != 0 {
		t.Errorf("%d requests wait for the reviewer after the rebase", n)
	}
	// The worker's next call names the commit it staged; that joins the
	// push that rebased it instead of answering "no such staged commit".
	if again, err := e.s.Push(context.Background(), shortid.Hash(first.New), "", nil); err == nil || !strings.Contains(err.Error(), "already pushed") {
		t.Errorf("pushing the pre-rebase commit again: %+v, %v", again, err)
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "moved") || !strings.Contains(notes, "approval of "+first.ID) || strings.Contains(notes, "fetch") {
		t.Errorf("notes %q", notes)
	}
	if got := git(t, r, "show", "main:a.txt"); got != "a\n" {
		t.Errorf("a.txt on the target: %q", got)
	}
	if got := git(t, r, "show", "main:other.txt"); got != "someone else\n" {
		t.Errorf("the other commit was lost: %q", got)
	}
	recs, err := ledger.Records(e.l.Path())
	must(t, err)
	by := ""
	for _, rec := range recs {
		if rec.Kind == ledger.KindDecision && strings.Contains(string(rec.Data), "rebased:"+first.ID) {
			by = string(rec.Data)
		}
	}
	if by == "" {
		t.Errorf("the ledger has no decision on the rebased request by the first approval")
	}
}

// A push the reviewer picked files of, whose target moved before it
// landed: what was approved was a choice, so the rebased push is asked
// again.
func TestMovedTargetAfterAPickAsksAgain(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	e.write(t, "b.txt", "b\n")
	_, err := e.s.Stage(nil, "A and B")
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), "", "", nil)
		done <- err
	}()
	first := waitPending(t, e.gate, 1)[0]
	commitTo(t, r, "other.txt", "someone else\n")
	_, rerr := e.gate.Resolve(approval.Decision{Request: first.ID, Verdict: approval.Pick, Paths: []string{"a.txt"}})
	must(t, rerr)
	second := waitPending(t, e.gate, 1)[0]
	if second.ID == first.ID {
		t.Fatal("no new request after the target moved")
	}
	_, rerr = e.gate.Resolve(approval.Decision{Request: second.ID, Verdict: approval.Approve})
	must(t, rerr)
	must(t, <-done)
}

// Issue 11: eight servers pushing to one branch. Each landed push used to
// cost about five "target moved" answers, each a worker retry. Now every
// call lands on its first try; the rounds it took inside are reported.
func TestEightServersOneBranch(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	const n = 8
	envs := make([]*env, n)
	for i := range envs {
		envs[i] = newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}}})
		envs[i].write(t, fmt.Sprintf("f%d.txt", i), fmt.Sprintln(i))
		_, err := envs[i].s.Stage(nil, fmt.Sprint("file ", i))
		must(t, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = envs[i].s.Push(context.Background(), "", "", nil)
		}()
	}
	wg.Wait()
	requests := 0
	for i, e := range envs {
		if errs[i] != nil {
			t.Errorf("server %d: %v", i, errs[i])
		}
		requests += pushRecords(t, e.l)[ledger.KindRequest]
	}
	files := git(t, r, "ls-tree", "--name-only", "main")
	for i := range envs {
		if !strings.Contains(files, fmt.Sprintf("f%d.txt", i)) {
			t.Errorf("f%d.txt is not on the branch:\n%s", i, files)
		}
	}
	t.Logf("%d pushes landed, each on the worker's first call; %d requests in all (%.1f per push)", n, requests, float64(requests)/n)
}

// Two pushes of one chain, the earlier commit's request decided last: the
// later one lands first and carries the earlier commit with it, so the
// earlier push, approved then, has nothing left to do and says so (it
// used to fail with "rebasing onto ... lost commit").
func TestEarlierCommitCarriedByALaterPush(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n"})
	e := newEnv(t, r, config{})
	e.write(t, "a.txt", "a\n")
	c1, err := e.s.Stage(nil, "A")
	must(t, err)
	first := make(chan error, 1)
	var res1 session.PushResult
	go func() {
		var err error
		res1, err = e.s.Push(context.Background(), c1.ID.String(), "", nil)
		first <- err
	}()
	req1 := waitPending(t, e.gate, 1)[0]
	e.write(t, "b.txt", "b\n")
	c2, err := e.s.Stage(nil, "B")
	must(t, err)
	second := make(chan error, 1)
	go func() {
		_, err := e.s.Push(context.Background(), c2.ID.String(), "", nil)
		second <- err
	}()
	var req2 *approval.Request
	for _, q := range waitPending(t, e.gate, 2) {
		if q.ID != req1.ID {
			req2 = q
		}
	}
	_, err = e.gate.Resolve(approval.Decision{Request: req2.ID, Verdict: approval.Approve})
	must(t, err)
	must(t, <-second)
	// Issue 24: the branch moved under req1, so it was asked again on the
	// new head, which carries c1: nothing is left to ask.
	if _, err = e.gate.Resolve(approval.Decision{Request: req1.ID, Verdict: approval.Approve}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("req1 still open after the branch moved under it: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the earlier commit's push: %v", err)
	}
	if !res1.Already || res1.Commit != c1.ID {
		t.Errorf("the earlier push answered %+v; want it already there", res1)
	}
	if head := strings.TrimSpace(git(t, r, "rev-parse", "main")); head != c2.ID.String() {
		t.Errorf("main is at %s, want %s", head, c2.ID)
	}
}

// Issue 22: eight servers pushing disjoint files to one branch, round
// after round, used to answer a quarter of their calls "target moved, push
// again". A push the reviewer approved and whose rebase shows the same
// changes lands on that approval: no call gives up, and the reviewer is
// asked once a push, whatever the branch did meanwhile.
func TestBusyBranchNeverSendsTheWorkerBack(t *testing.T) {
	const servers, rounds = 8, 5
	for _, c := range []struct {
		name string
		auto bool
	}{{"auto-approved", true}, {"a reviewer approving each request", false}} {
		t.Run(c.name, func(t *testing.T) {
			r := repo(t, true, map[string]string{"README.md": "# p\n"})
			var policy approval.Policy
			if c.auto {
				policy.AutoApprove = []string{"local-bare:" + r}
			}
			envs := make([]*env, servers)
			for i := range envs {
				envs[i] = newEnv(t, r, config{policy: policy, timeout: time.Minute})
			}
			stop := make(chan struct{})
			var asked atomic.Int64
			if !c.auto {
				for _, e := range envs {
					go func() { // the reviewer approves each request once
						for {
							select {
							case <-stop:
								return
							case <-time.After(2 * time.Millisecond):
							}
							for _, q := range e.gate.Pending() {
								if _, err := e.gate.Resolve(approval.Decision{Request: q.ID, Verdict: approval.Approve}); err == nil {
									asked.Add(1)
								}
							}
						}
					}()
				}
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failed []string
			for i, e := range envs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; k < rounds; k++ {
						e.write(t, fmt.Sprintf("s%d/r%d.txt", i, k), fmt.Sprintln(i, k))
						if _, err := e.s.Stage(nil, fmt.Sprintf("server %d round %d", i, k)); err != nil {
							mu.Lock()
							failed = append(failed, err.Error())
							mu.Unlock()
							continue
						}
						if _, err := e.s.Push(context.Background(), "", "", nil); err != nil {
							mu.Lock()
							failed = append(failed, err.Error())
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			if len(failed) > 0 {
				t.Errorf("%d of %d calls failed; the first: %s", len(failed), servers*rounds, failed[0])
			}
			files := git(t, r, "ls-tree", "-r", "--name-only", "main")
			if n := strings.Count(files, "\n"); n != servers*rounds+1 {
				t.Errorf("the branch holds %d files, want %d", n, servers*rounds+1)
			}
			if !c.auto && asked.Load() != servers*rounds {
				t.Errorf("the reviewer was asked %d times for %d pushes", asked.Load(), servers*rounds)
			}
		})
	}
}

// Two servers changing the same file of a busy branch: the one that lands
// second cannot rebase without a person deciding, and its call says which
// file conflicts and what to do, not "push again".
func TestBusyBranchConflictNeedsAPerson(t *testing.T) {
	r := repo(t, true, map[string]string{"README.md": "# p\n", "shared.txt": "base\n"})
	policy := approval.Policy{AutoApprove: []string{"local-bare:" + r}}
	a, b := newEnv(t, r, config{policy: policy}), newEnv(t, r, config{policy: policy})
	a.write(t, "shared.txt", "from a\n")
	b.write(t, "shared.txt", "from b\n")
	_, err := a.s.Stage(nil, "a")
	must(t, err)
	_, err = b.s.Stage(nil, "b")
	must(t, err)
	_, errA := a.s.Push(context.Background(), "", "", nil)
	_, errB := b.s.Push(context.Background(), "", "", nil)
	must(t, errA)
	var conflict *staging.ConflictError
	if !errors.As(errB, &conflict) || !strings.Contains(errB.Error(), "shared.txt") || strings.Contains(errB.Error(), "push again") {
		t.Fatalf("the second push: %v", errB)
	}
}
