package memfs

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// listing is a snapshot's every entry, directories included.
func listing(s *Snapshot) string {
	var out []string
	var walk func(n *tree.Node, p string)
	walk = func(n *tree.Node, p string) {
		for it := n.Kids.Iterator(); !it.Done(); {
			k, c, _ := it.Next()
			q := p + "/" + k
			out = append(out, fmt.Sprintf("%s %v %q ino=%d", q, c.Mode(), c.Data, c.Ino))
			if c.Kind == tree.KindDir {
				walk(c, q)
			}
		}
	}
	walk(s.root, "")
	return fmt.Sprint(out)
}

// TestDeltaApplyIntern drives a workspace through random changes,
// checkpoints and rollbacks, writes every state down as deltas the way a
// durable session does, rebuilds them, and checks that the rebuilt trees
// equal the originals entry for entry (identities included) and that,
// once interned, they hold what the originals held.
func TestDeltaApplyIntern(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		w, err := New()
		if err != nil {
			t.Fatal(err)
		}
		into, _ := New()
		var saved, rebuilt []*Snapshot
		var prev, prevRebuilt *Snapshot
		names := []string{"a", "b", "d/c", "d/e/f", "g/h"}
		for step := 0; step < 60; step++ {
			p := names[r.IntN(len(names))]
			switch r.IntN(7) {
			case 0, 1:
				w.MkdirAll(dirOf(p), 0o755)
				w.WriteFile(p, []byte(fmt.Sprint(r.IntN(3))), 0o644)
			case 2:
				w.RemoveAll(p)
			case 3:
				q := names[r.IntN(len(names))]
				w.MkdirAll(dirOf(q), 0o755)
				w.Rename(p, q)
			case 4:
				w.MkdirAll(p+"x/empty", 0o700)
			case 5:
				w.Checkpoint("")
			case 6:
				w.Rollback("")
			}
			live := w.Snapshot()
			ds := DeltaOf(prev, live)
			got, err := into.Apply(prevRebuilt, ds)
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if listing(got) != listing(live) {
				t.Fatalf("seed %d step %d: rebuilt\n%s\nwant\n%s", seed, step, listing(got), listing(live))
			}
			saved, rebuilt = append(saved, live), append(rebuilt, got)
			prev, prevRebuilt = live, got
		}
		want := tree.CountUnique(rootsOf(saved)...)
		in := Intern(rebuilt...)
		// Versions of one file with the same content become one: the
		// interned trees may hold less than the originals (which kept a
		// copy per write of the same bytes), never more.
		got := tree.CountUnique(rootsOf(in)...)
		if got.Bytes > want.Bytes || got.Files > want.Files || got.Dirs > want.Dirs {
			t.Fatalf("seed %d: interned trees hold %+v, the originals %+v", seed, got, want)
		}
		for i := range in {
			if listing(in[i]) != listing(saved[i]) || tree.CountUnique(in[i].root) != tree.CountUnique(saved[i].root) {
				t.Fatalf("seed %d: tree %d changed in interning", seed, i)
			}
		}
	}
}

func dirOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}

func rootsOf(ss []*Snapshot) []*tree.Node {
	out := make([]*tree.Node, len(ss))
	for i, s := range ss {
		out[i] = s.root
	}
	return out
}
