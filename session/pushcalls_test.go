package session_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
	"github.com/go-git/go-git/v5/plumbing"
)

// countingTarget counts the session's calls to a target (all but ID and
// Describe, which only say what it is), forwarding each.
type countingTarget struct {
	targets.Target
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingTarget) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[name]++
}

func (c *countingTarget) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

func (c *countingTarget) Head(ctx context.Context, ref string) (plumbing.Hash, error) {
	c.count("Head")
	return c.Target.Head(ctx, ref)
}

func (c *countingTarget) Fetch(ctx context.Context, ref string, paths []string, store *staging.Store) (plumbing.Hash, error) {
	c.count("Fetch")
	return c.Target.Fetch(ctx, ref, paths, store)
}

func (c *countingTarget) Push(ctx context.Context, g approval.Grant, store *staging.Store) error {
	c.count("Push")
	return c.Target.Push(ctx, g, store)
}

func (c *countingTarget) DefaultBranch(ctx context.Context) (string, error) {
	c.count("DefaultBranch")
	return c.Target.(targets.DefaultBrancher).DefaultBranch(ctx)
}

func (c *countingTarget) CheckedOut(ctx context.Context, ref string) (bool, error) {
	c.count("CheckedOut")
	return c.Target.(*targets.Local).CheckedOut(ctx, ref)
}

func (c *countingTarget) Facts(ctx context.Context, branch string) (targets.Facts, error) {
	c.count("Facts")
	return c.Target.(targets.FactsReader).Facts(ctx, branch)
}

func (c *countingTarget) RecordLedgerHead(ctx context.Context, h targets.LedgerHead) error {
	c.count("RecordLedgerHead")
	return c.Target.(*targets.Local).RecordLedgerHead(ctx, h)
}

// Issue 23: one push to a local target calls the target at most three
// times per attempt (its facts, the push, the ledger's head), to a working
// tree and to a bare repository, and when the target moved under an
// approved push (two attempts: the second rebases onto what the first was
// told). It made up to nine before.
func TestPushCallsTargetAtMostThreeTimesPerAttempt(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bare, moved bool
	}{
		{"working tree", false, false},
		{"bare", true, false},
		{"working tree, moved", false, true},
		{"bare, moved", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := repo(t, tc.bare, map[string]string{"README.md": "# p\n"})
			var ct *countingTarget
			e := newEnv(t, r, config{wrap: func(tg targets.Target) targets.Target {
				ct = &countingTarget{Target: tg, calls: map[string]int{}}
				return ct
			}})
			e.write(t, "a.txt", "a\n")
			c, err := e.s.Stage(nil, "A")
			must(t, err)
			ct.reset() // what opening the session and pulling took
			done := make(chan error, 1)
			var res session.PushResult
			go func() {
				var err error
				res, err = e.s.Push(context.Background(), c.ID.String(), "", nil)
				done <- err
			}()
			req := waitPending(t, e.gate, 1)[0]
			if tc.moved {
				commitTo(t, r, "b.txt", "b\n")
			}
			_, err = e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve})
			must(t, err)
			must(t, <-done)
			calls := ct.reset()
			total := 0
			for _, n := range calls {
				total += n
			}
			attempts := 1
			if tc.moved {
				attempts = 2
			}
			t.Logf("%d calls in %d attempt(s): %v", total, attempts, calls)
			if calls["Push"] != attempts || total > 3*attempts {
				t.Errorf("the push made %d calls to the target in %d attempt(s) (%v); want at most %d, and one Push per attempt", total, attempts, calls, 3*attempts)
			}
			if got := strings.TrimSpace(git(t, r, "rev-parse", "main")); got != res.Commit.String() {
				t.Errorf("main is at %s, the push answered %s", got, res.Commit)
			}
		})
	}
}
