package memfs_test

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

// TestRandomOperationsKeepInvariants drives random operations (both views,
// writes through handles, checkpoints and rollbacks) over a small name space
// and checks, after every step, what a copy-on-write design most easily
// breaks:
//
//   - a checkpoint never changes after it is taken: rolling back to it gives
//     exactly the tree recorded when it was taken;
//   - Changes equals a brute-force diff between the base and the tree now;
//   - the usage tallies equal a recount.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandom(t, uint64(seed), 250) })
	}
}

func runRandom(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := newWorkspace(t)
	b := w.Billy()
	names := []string{"a", "b", "d/x", "d/y", "d/e/z", "e", "d/e", "f/g/h"}
	pick := func() string { return names[rng.IntN(len(names))] }
	content := func() []byte {
		n := rng.IntN(3) * rng.IntN(5000)
		data := make([]byte, n)
		for i := range data {
			data[i] = byte('a' + rng.IntN(3))
		}
		return data
	}
	var seedFiles []memfs.SeedFile
	for _, n := range []string{"a", "d/x", "d/e/z"} {
		seedFiles = append(seedFiles, memfs.SeedFile{Path: n, Mode: 0o644, Data: content()})
	}
	seedFiles = append(seedFiles, memfs.SeedFile{Path: "l", Mode: fs.ModeSymlink, Data: []byte("a")})
	if _, err := w.Seed(seedFiles); err != nil {
		t.Fatal(err)
	}
	base := dumpTree(t, w)
	type cp struct {
		name string
		tree map[string]entry
	}
	var cps []cp
	var open []*memfs.File
	for step := 0; step < steps; step++ {
		var op string
		switch r := rng.IntN(15); r {
		case 0, 1:
			op = "write"
			w.WriteFile(pick(), content(), 0)
		case 2:
			op = "billy write"
			if f, err := b.Create(pick()); err == nil {
				f.Write(content())
				f.Close()
			}
		case 3:
			op = "remove"
			w.Remove(pick())
		case 4:
			op = "removeall"
			w.RemoveAll(pick())
		case 5, 6:
			op = "rename"
			w.Rename(pick(), pick())
		case 7:
			op = "chmod"
			w.Chmod(pick(), []fs.FileMode{0o644, 0o755, 0o600}[rng.IntN(3)])
		case 8:
			op = "symlink"
			w.Symlink([]string{"a", "../a", "x", "e"}[rng.IntN(4)], pick())
		case 9:
			op = "mkdir"
			w.MkdirAll(pick(), 0o755)
		case 10:
			op = "open"
			if f, err := w.OpenFile(pick(), os.O_RDWR|os.O_CREATE, 0o644); err == nil {
				open = append(open, f)
			}
		case 11, 12:
			op = "handle write"
			if len(open) > 0 {
				f := open[rng.IntN(len(open))]
				switch rng.IntN(3) {
				case 0:
					f.WriteAt(content(), int64(rng.IntN(4000)))
				case 1:
					f.Write(content())
				default:
					f.Truncate(int64(rng.IntN(6000)))
				}
			}
		case 13:
			op = "checkpoint"
			if info, err := w.Checkpoint(""); err == nil {
				cps = append(cps, cp{info.Name, dumpTree(t, w)})
			}
		case 14:
			op = "rollback"
			if len(cps) > 0 {
				i := rng.IntN(len(cps))
				if _, err := w.Rollback(cps[i].name); err != nil {
					t.Fatal(err)
				}
				if got := dumpTree(t, w); !reflect.DeepEqual(got, cps[i].tree) {
					t.Fatalf("step %d: rollback to %s does not give the tree recorded then:\n got %v\nwant %v", step, cps[i].name, got, cps[i].tree)
				}
				cps = cps[:i+1]
			}
		}
		now := dumpTree(t, w)
		if got, want := changesOf(w), bruteDiff(base, now); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d (%s): Changes\n got %v\nwant %v", step, op, got, want)
		}
		live, held := w.Usage()
		xlive, xheld := memfs.ExactUsage(w)
		if live != xlive || held != xheld {
			t.Fatalf("step %d (%s): tallies live %+v held %+v, recount live %+v held %+v", step, op, live, held, xlive, xheld)
		}
	}
	// Every checkpoint still holds what it held when it was taken.
	for i := len(cps) - 1; i >= 0; i-- {
		if _, err := w.Rollback(cps[i].name); err != nil {
			t.Fatal(err)
		}
		if got := dumpTree(t, w); !reflect.DeepEqual(got, cps[i].tree) {
			t.Fatalf("checkpoint %s changed after it was taken:\n got %v\nwant %v", cps[i].name, got, cps[i].tree)
		}
	}
}

func changesOf(w *memfs.Workspace) []string {
	var out []string
	for _, c := range w.Changes() {
		out = append(out, c.Kind.String()+" "+c.Path)
	}
	return out
}

// bruteDiff compares two whole trees the way git would: files and symlinks
// by type, executable bit and content.
func bruteDiff(from, to map[string]entry) []string {
	var out []string
	tracked := func(e entry, ok bool) bool { return ok && !e.mode.IsDir() }
	for p := range mergeKeys(from, to) {
		a, aok := from[p]
		b, bok := to[p]
		aok, bok = tracked(a, aok), tracked(b, bok)
		switch {
		case !aok && bok:
			out = append(out, "create "+p)
		case aok && !bok:
			out = append(out, "delete "+p)
		case aok && bok && (a.mode.Type() != b.mode.Type() || a.data != b.data ||
			a.mode.Type() == 0 && a.mode&0o100 != b.mode&0o100):
			out = append(out, "update "+p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][len(kindOf(out[i])):] < out[j][len(kindOf(out[j])):] })
	return out
}

func kindOf(s string) string {
	for i := range s {
		if s[i] == ' ' {
			return s[:i+1]
		}
	}
	return s
}
