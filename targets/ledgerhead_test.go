package targets_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/targettest"
)

// ledgerHeads is what a ledger's head is written to and read from.
type ledgerHeads interface {
	RecordLedgerHead(ctx context.Context, h targets.LedgerHead) error
	ReadLedgerHead(ctx context.Context, host, path string) (targets.LedgerHead, bool, error)
}

// Every target keeps a ledger's head under its own ref, moves it only
// forward, chains one commit per record, keeps several ledgers apart, and
// reads back exactly what was written, from a fresh opening too.
func TestLedgerHead(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// the target, its git directory, and how to open it again
		open func(t *testing.T) (ledgerHeads, string, string, targets.GitHubOptions)
	}{
		{"local working tree", func(t *testing.T) (ledgerHeads, string, string, targets.GitHubOptions) {
			dir := t.TempDir()
			run(t, dir, nil, nil, "init", "-q", "-b", "main")
			run(t, dir, nil, nil, "commit", "-q", "--allow-empty", "-m", "first")
			l, err := targets.OpenLocal(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			return l, dir, l.ID(), targets.GitHubOptions{}
		}},
		{"local bare", func(t *testing.T) (ledgerHeads, string, string, targets.GitHubOptions) {
			dir := t.TempDir()
			run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main")
			l, err := targets.OpenLocalBare(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			return l, dir, l.ID(), targets.GitHubOptions{}
		}},
		{"github", func(t *testing.T) (ledgerHeads, string, string, targets.GitHubOptions) {
			g, emu, insp, _ := emulated(t, targets.GitHubOptions{})
			insp.Commit(t, "main", map[string]targettest.File{"README": {Data: "hi\n"}})
			return g, emu.Dir(), g.ID(), targets.GitHubOptions{APIURL: emu.URL, GitURL: emu.GitURL, Token: emuToken}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, gitDir, id, gh := tc.open(t)
			host, path := "build-host", "/home/someone/.local/state/airlock/ledger.jsonl"
			head := func(seq uint64) targets.LedgerHead {
				return targets.LedgerHead{Seq: seq, Hash: strings.Repeat(fmt.Sprintf("%x", seq%16), 64), First: strings.Repeat("f", 64), Host: host, Path: path,
					Time: time.Date(2026, 11, 24, 20, 0, int(seq), 0, time.UTC)}
			}
			if _, ok, err := tgt.ReadLedgerHead(ctx, host, path); ok || err != nil {
				t.Fatalf("a new repository keeps a head: %v %v", ok, err)
			}
			// The ref moves forward only: the head it keeps again is
			// nothing to say, one behind it (or another at its number)
			// is left alone and said, with what the target keeps.
			for _, c := range []struct {
				seq  uint64
				kept uint64 // 0: recorded
			}{{3, 0}, {2, 3}, {3, 0}, {5, 0}} {
				err := tgt.RecordLedgerHead(ctx, head(c.seq))
				var a *targets.LedgerAheadError
				switch {
				case c.kept == 0 && err != nil:
					t.Fatalf("recording %d: %v", c.seq, err)
				case c.kept != 0 && (!errors.As(err, &a) || a.Kept != head(c.kept)):
					t.Fatalf("recording %d behind %d: %v", c.seq, c.kept, err)
				}
			}
			forged := head(5)
			forged.Hash = strings.Repeat("e", 64)
			if err := tgt.RecordLedgerHead(ctx, forged); !errors.As(err, new(*targets.LedgerAheadError)) {
				t.Fatalf("another record 5 over the kept one: %v", err)
			}
			got, ok, err := tgt.ReadLedgerHead(ctx, host, path)
			if err != nil || !ok || got != head(5) {
				t.Fatalf("read back %+v %v %v, want %+v", got, ok, err, head(5))
			}
			ref := targets.LedgerRef(host, path)
			if log := run(t, gitDir, nil, nil, "log", "--format=%s", ref); log != "airlock ledger head: record 5\nairlock ledger head: record 3\n" {
				t.Errorf("git log %s:\n%s", ref, log)
			}
			text := run(t, gitDir, nil, nil, "show", ref+":ledger-head")
			if !strings.Contains(text, "Airlock-Ledger-Seq: 5\n") {
				t.Errorf("the ledger-head file reads %q", text)
			}
			if all := run(t, gitDir, nil, nil, "log", "-p", "--format=%B", ref); strings.Contains(all, host) || strings.Contains(all, "someone") {
				// the machine's name and the ledger's path only key the ref:
				// the repository may be public
				t.Errorf("the target learns the host or the ledger's path:\n%s", all)
			}
			run(t, gitDir, nil, nil, "fsck", "--strict", "--no-dangling")

			// Another ledger's head is kept apart.
			other := head(9)
			other.Path = "/elsewhere/ledger.jsonl"
			if err := tgt.RecordLedgerHead(ctx, other); err != nil {
				t.Fatal(err)
			}
			if got, _, _ := tgt.ReadLedgerHead(ctx, host, path); got.Seq != 5 {
				t.Errorf("another ledger moved this one's head to %d", got.Seq)
			}

			// Servers sharing the ledger record at once: the latest wins.
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// One that lost the race to a later head is told so.
					if err := tgt.RecordLedgerHead(ctx, head(uint64(10+i))); err != nil && !errors.As(err, new(*targets.LedgerAheadError)) {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			// What `airlock ledger verify` opens reads the same.
			again, err := targets.OpenForLedger(ctx, id, gh)
			if err != nil {
				t.Fatal(err)
			}
			if got, _, err := again.ReadLedgerHead(ctx, host, path); got.Seq != 13 || err != nil {
				t.Errorf("after four servers recorded 10 to 13 the head is %d (%v)", got.Seq, err)
			}
		})
	}
}

// A ref under the ledger's name that airlock did not write (a blob, a
// commit without the lines) is reported by a read, and replaced by the
// next head written, which stays a valid commit.
func TestLedgerHeadOverSomethingElse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main")
	l, err := targets.OpenLocalBare(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	host, path := "h", "/ledger.jsonl"
	ref := targets.LedgerRef(host, path)
	blob := strings.TrimSpace(run(t, dir, []byte("not a head\n"), nil, "hash-object", "-w", "--stdin"))
	run(t, dir, nil, nil, "update-ref", ref, blob)
	if _, _, err := l.ReadLedgerHead(ctx, host, path); !errors.Is(err, targets.ErrNotLedgerHead) {
		t.Fatalf("a blob under the ledger's ref reads as %v", err)
	}
	h := targets.LedgerHead{Seq: 1, Hash: strings.Repeat("b", 64), First: strings.Repeat("b", 64), Host: host, Path: path, Time: time.Unix(0, 0).UTC()}
	if err := l.RecordLedgerHead(ctx, h); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := l.ReadLedgerHead(ctx, host, path); !ok || err != nil || got != h {
		t.Fatalf("after writing over it: %+v %v %v", got, ok, err)
	}
	run(t, dir, nil, nil, "fsck", "--strict", "--no-dangling")
}

// The ledger's ref made a symbolic ref to a branch (by anyone who can
// write the repository) is never written through: writing the head there
// would move the branch to a commit no reviewer approved, holding only the
// ledger's head. The symbolic ref is replaced by the head, the branch
// stays where it was.
func TestLedgerHeadThroughASymbolicRef(t *testing.T) {
	ctx := context.Background()
	for _, bare := range []bool{true, false} {
		t.Run(fmt.Sprintf("bare=%v", bare), func(t *testing.T) {
			dir := t.TempDir()
			var l ledgerHeads
			var err error
			if bare {
				run(t, dir, nil, nil, "init", "-q", "--bare", "-b", "main")
				work := t.TempDir()
				run(t, work, nil, nil, "init", "-q", "-b", "main")
				run(t, work, nil, nil, "commit", "-q", "--allow-empty", "-m", "reviewed")
				run(t, work, nil, nil, "push", "-q", dir, "main")
				l, err = targets.OpenLocalBare(ctx, dir)
			} else {
				run(t, dir, nil, nil, "init", "-q", "-b", "main")
				run(t, dir, nil, nil, "commit", "-q", "--allow-empty", "-m", "reviewed")
				l, err = targets.OpenLocal(ctx, dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			main := run(t, dir, nil, nil, "rev-parse", "refs/heads/main")
			host, path := "h", "/ledger.jsonl"
			ref := targets.LedgerRef(host, path)
			run(t, dir, nil, nil, "symbolic-ref", ref, "refs/heads/main")
			h := targets.LedgerHead{Seq: 1, Hash: strings.Repeat("b", 64), First: strings.Repeat("b", 64), Host: host, Path: path, Time: time.Unix(0, 0).UTC()}
			if err := l.RecordLedgerHead(ctx, h); err != nil {
				t.Logf("recording through a symbolic ref: %v", err)
			}
			if now := run(t, dir, nil, nil, "rev-parse", "refs/heads/main"); now != main {
				t.Errorf("the ledger's head moved main from %s to %s: %s", strings.TrimSpace(main), strings.TrimSpace(now),
					run(t, dir, nil, nil, "log", "--format=%s", "-2", "refs/heads/main"))
			}
			if got, ok, err := l.ReadLedgerHead(ctx, host, path); !ok || err != nil || got != h {
				t.Errorf("the head after: %+v %v %v", got, ok, err)
			}
		})
	}
}
