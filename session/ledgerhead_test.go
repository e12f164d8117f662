package session_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/targets"
)

// A push that landed leaves the ledger's head in the target by the time it
// answers: the "pushed" record's number and hash, under the ledger's ref.
func TestPushKeepsTheLedgerHeadInTheTarget(t *testing.T) {
	for _, bare := range []bool{true, false} {
		r := repo(t, bare, map[string]string{"README.md": "# p\n"})
		id := "local:" + r
		if bare {
			id = "local-bare:" + r
		}
		e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{id}}})
		for i, content := range []string{"a\n", "b\n"} {
			e.write(t, "a.txt", content)
			_, err := e.s.Stage(nil, "A")
			must(t, err)
			if _, err := e.s.Push(context.Background(), "", "", nil); err != nil {
				t.Fatal(err)
			}
			head, err := e.l.Head()
			must(t, err)
			if head.Kind != ledger.KindPush {
				t.Fatalf("push %d: the ledger ends in a %s record", i, head.Kind)
			}
			tgt, err := targets.OpenForLedger(context.Background(), id, targets.GitHubOptions{})
			must(t, err)
			host, path := targets.LedgerAt(e.l.Path())
			kept, ok, err := tgt.ReadLedgerHead(context.Background(), host, path)
			if err != nil || !ok || kept.Seq != head.Seq || kept.Hash != head.Hash {
				t.Fatalf("%s, push %d: the target keeps %+v (%v, %v); the ledger's head is %d %s", id, i, kept, ok, err, head.Seq, head.Hash)
			}
		}
	}
}

// ledgerKeeper is the part of a target that keeps the ledger's head.
type ledgerKeeper interface {
	RecordLedgerHead(ctx context.Context, h targets.LedgerHead) error
}

// laterServer is a target on which, just before the push records its
// head, another server sharing the ledger records a later one.
type laterServer struct {
	targets.Target
	before func(k ledgerKeeper)
}

func (w laterServer) RecordLedgerHead(ctx context.Context, h targets.LedgerHead) error {
	k := w.Target.(ledgerKeeper)
	w.before(k)
	return k.RecordLedgerHead(ctx, h)
}

// A target keeping a head past the push's: one of this ledger's records
// (another server of the same ledger pushed later) is as it should be; a
// head the ledger does not hold (a hostile target's forged ref, which
// would otherwise keep the head from ever moving again, unsaid) is told
// to the worker and the operator, and the ref is left alone.
func TestLedgerHeadKeptAhead(t *testing.T) {
	ctx := context.Background()
	t.Run("by another server of the same ledger", func(t *testing.T) {
		r := repo(t, true, map[string]string{"README.md": "# p\n"})
		var e *env
		var later ledger.Record
		var warned []string
		e = newEnv(t, r, config{
			policy: approval.Policy{AutoApprove: []string{"local-bare:" + r}},
			warn:   func(s string) { warned = append(warned, s) },
			wrap: func(tg targets.Target) targets.Target {
				return laterServer{Target: tg, before: func(k ledgerKeeper) {
					head, err := e.l.Head()
					must(t, err)
					first, err := e.l.First()
					must(t, err)
					later, err = e.l.Append(ledger.KindRequest, map[string]string{"by": "another server"})
					must(t, err)
					host, path := targets.LedgerAt(e.l.Path())
					must(t, k.RecordLedgerHead(ctx, targets.LedgerHead{Seq: later.Seq, Hash: later.Hash, First: first.Hash, Host: host, Path: path, Time: later.Time}))
					if later.Seq <= head.Seq {
						t.Fatalf("the other server's record %d is not past %d", later.Seq, head.Seq)
					}
				}}
			},
		})
		e.write(t, "a.txt", "a\n")
		_, err := e.s.Stage(nil, "A")
		must(t, err)
		res, err := e.s.Push(ctx, "", "", nil)
		must(t, err)
		if notes := strings.Join(res.Notes, "\n"); strings.Contains(notes, "ledger") || len(warned) != 0 {
			t.Fatalf("a later head of this ledger was told as a problem: %q %q", notes, warned)
		}
	})
	t.Run("forged by the target", func(t *testing.T) {
		r := repo(t, true, map[string]string{"README.md": "# p\n"})
		id := "local-bare:" + r
		var warned []string
		e := newEnv(t, r, config{policy: approval.Policy{AutoApprove: []string{id}}, warn: func(s string) { warned = append(warned, s) }})
		tgt, err := targets.OpenForLedger(ctx, id, targets.GitHubOptions{})
		must(t, err)
		host, path := targets.LedgerAt(e.l.Path())
		forged := targets.LedgerHead{Seq: 1 << 40, Hash: strings.Repeat("e", 64), First: strings.Repeat("e", 64), Host: host, Path: path}
		must(t, tgt.(ledgerKeeper).RecordLedgerHead(ctx, forged))
		for i, content := range []string{"a\n", "b\n"} {
			e.write(t, "a.txt", content)
			_, err := e.s.Stage(nil, "A")
			must(t, err)
			res, err := e.s.Push(ctx, "", "", nil)
			must(t, err)
			notes := strings.Join(res.Notes, "\n")
			if !strings.Contains(notes, "keeps record 1099511627776") || !strings.Contains(notes, "ledger verify --target "+id) {
				t.Fatalf("push %d: the forged head was not told: %q", i, notes)
			}
			if len(warned) != i+1 {
				t.Fatalf("push %d: the operator was warned %d times", i, len(warned))
			}
		}
		kept, _, err := tgt.ReadLedgerHead(ctx, host, path)
		must(t, err)
		if kept.Seq != forged.Seq {
			t.Fatalf("the ref was moved to %d", kept.Seq)
		}
	})
}
