package memfs

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/airlock-dev/airlock/memfs/internal/tree"
)

// TestHeldPartsMatchAFullCount checks the side-by-side count of held.go
// against a count of every reachable version, after random writes,
// renames (which move versions to other places), removals, checkpoints
// taken, deleted and rolled back to, and bases and kept snapshots moved.
func TestHeldPartsMatchAFullCount(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			w, err := New(WithLimits(Limits{MaxCheckpoints: 1000}))
			if err != nil {
				t.Fatal(err)
			}
			names := []string{"a", "b", "d/x", "d/y", "d/e/z", "e", "d/e", "f/g/h", "f/g", "f"}
			pick := func() string { return names[rng.IntN(len(names))] }
			var kept []*Snapshot
			for step := 0; step < 300; step++ {
				switch rng.IntN(10) {
				case 0, 1, 2:
					w.WriteFile(pick(), make([]byte, rng.IntN(100)), 0o644)
				case 3:
					w.MkdirAll(pick(), 0o755)
				case 4, 5:
					w.Rename(pick(), pick())
				case 6:
					w.RemoveAll(pick())
				case 7:
					w.Checkpoint("")
				case 8:
					if cps := w.Checkpoints(); len(cps) > 0 {
						c := cps[rng.IntN(len(cps))].Name
						if rng.IntN(2) == 0 {
							w.DeleteCheckpoint(c)
						} else {
							w.Rollback(c)
						}
					}
				case 9:
					kept = append(kept, w.Snapshot())
					if len(kept) > 3 {
						kept = kept[1:]
					}
					base := w.Base()
					if rng.IntN(2) == 0 {
						base = kept[rng.IntN(len(kept))]
					}
					w.SetBase(base, kept[:rng.IntN(len(kept)+1)]...)
				}
				live := tree.CountUnique(w.cur.root)
				withRetained := tree.CountUnique(append([]*tree.Node{w.cur.root, w.base.root}, w.retained...)...)
				all := tree.CountUnique(w.roots(w.cur.root)...)
				wantRetained, wantCheckpoints := withRetained, all
				wantRetained.Sub(live)
				wantCheckpoints.Sub(withRetained)
				parts := w.heldParts()
				if parts.byRetained != wantRetained || parts.byCheckpoints != wantCheckpoints {
					t.Fatalf("step %d: held beyond the live tree: by retained %+v, by checkpoints %+v; a full count says %+v, %+v",
						step, parts.byRetained, parts.byCheckpoints, wantRetained, wantCheckpoints)
				}
				if w.cur.usage.Live != live {
					t.Fatalf("step %d: live tally %+v, full count %+v", step, w.cur.usage.Live, live)
				}
				w.recount()
				if w.cur.usage.Held != all {
					t.Fatalf("step %d: recount %+v, full count %+v", step, w.cur.usage.Held, all)
				}
			}
		})
	}
}
