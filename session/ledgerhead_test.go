package session_test

import (
	"context"
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
