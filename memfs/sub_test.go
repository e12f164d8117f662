package memfs_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

// contents is a snapshot as path -> mode and content.
func contents(t *testing.T, s *memfs.Snapshot) string {
	t.Helper()
	var b strings.Builder
	err := s.Walk(func(e memfs.Entry) error {
		data, err := e.Content()
		fmt.Fprintf(&b, "%s %o %q\n", e.Path, e.Mode, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func changeList(cs []memfs.Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s:%v", c.Path, c.Kind))
	}
	return strings.Join(out, " ")
}

// subPair is a standalone workspace and the Sub "api" of another, whose
// sibling Sub "web" gets operations of its own: whatever is done to both
// through the same calls must look the same, and web must not notice.
type subPair struct {
	alone    *memfs.Workspace
	whole    *memfs.Workspace
	api, web *memfs.Sub
	kept     []*memfs.Snapshot // snapshots kept through api, and alone
	keptA    []*memfs.Snapshot
}

func newSubPair(t *testing.T, limits memfs.Limits) *subPair {
	t.Helper()
	alone, err := memfs.New(memfs.WithLimits(limits))
	must(t, err)
	whole, err := memfs.New(memfs.WithLimits(limits))
	must(t, err)
	api, err := whole.Sub("api")
	must(t, err)
	web, err := whole.Sub("web")
	must(t, err)
	return &subPair{alone: alone, whole: whole, api: api, web: web}
}

func (p *subPair) check(t *testing.T, step string) {
	t.Helper()
	if a, b := contents(t, p.alone.Base()), contents(t, p.api.Base()); a != b {
		t.Fatalf("%s: bases differ:\nalone:\n%s\napi:\n%s", step, a, b)
	}
	if a, b := contents(t, p.alone.Snapshot()), contents(t, p.api.Snapshot()); a != b {
		t.Fatalf("%s: live trees differ:\nalone:\n%s\napi:\n%s", step, a, b)
	}
	if a, b := changeList(p.alone.Changes()), changeList(p.api.Changes()); a != b {
		t.Fatalf("%s: changes differ:\nalone: %s\napi:   %s", step, a, b)
	}
	_, held := p.whole.Usage()
	_, exact := p.whole.ExactUsage()
	if held.Bytes < exact.Bytes || held.Files < exact.Files {
		t.Fatalf("%s: the held tally %+v undercounts the exact %+v", step, held, exact)
	}
}

// The same random operations on a standalone workspace and on a Sub of a
// workspace whose other Sub changes too give the same bases, live trees
// and changes; the other Sub's stay its own.
func TestSubBehavesAsAWorkspace(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 15))
			p := newSubPair(t, memfs.Limits{})
			names := []string{"a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "g.sh"}
			seed := []memfs.SeedFile{{Path: "a.txt", Mode: 0o644, Data: []byte("a0")}, {Path: "d/c.txt", Mode: 0o644, Data: []byte("c0")}}
			_, err := p.alone.Seed(seed)
			must(t, err)
			_, err = p.api.Seed(seed)
			must(t, err)
			p.check(t, "seed")
			webWant := ""
			for i := range 120 {
				name := names[rng.IntN(len(names))]
				step := fmt.Sprintf("step %d", i)
				switch op := rng.IntN(8); op {
				case 0, 1, 2:
					data := []byte(fmt.Sprintf("%s v%d", name, i))
					must(t, p.alone.WriteFile(name, data, 0o644))
					must(t, p.whole.WriteFile("api/"+name, data, 0o644))
					step += " write " + name
				case 3:
					e1 := p.alone.Remove(name)
					e2 := p.whole.Remove("api/" + name)
					if (e1 == nil) != (e2 == nil) {
						t.Fatalf("%s: removing %s: %v and %v", step, name, e1, e2)
					}
					step += " remove " + name
				case 4:
					// The area's step: the live tree becomes the base.
					p.keptA = append(p.keptA, p.alone.Base())
					p.kept = append(p.kept, p.api.Base())
					p.alone.SetBase(p.alone.Snapshot(), p.keptA...)
					p.api.SetBase(p.api.Snapshot(), p.kept...)
					step += " setbase"
				case 5:
					must(t, p.alone.Restore(p.alone.Base()))
					must(t, p.api.Restore(p.api.Base()))
					step += " restore"
				case 6:
					// An overlay of the live tree onto the base at one path,
					// applied as if it came from elsewhere.
					la, lb := p.alone.Snapshot(), p.api.Snapshot()
					ea := p.alone.ApplyFrom(la, []string{name})
					eb := p.api.ApplyFrom(lb, []string{name})
					if (ea == nil) != (eb == nil) {
						t.Fatalf("%s: ApplyFrom %s: %v and %v", step, name, ea, eb)
					}
					step += " applyfrom " + name
				case 7:
					// web changes on its own, base and all.
					data := []byte(fmt.Sprintf("web v%d", i))
					must(t, p.whole.WriteFile("web/"+name, data, 0o644))
					if rng.IntN(2) == 0 {
						p.web.SetBase(p.web.Snapshot())
					}
					webWant = contents(t, p.web.Snapshot())
					step += " web"
				}
				p.check(t, step)
				if webWant != "" && contents(t, p.web.Snapshot()) != webWant {
					t.Fatalf("%s: web changed under api's operations", step)
				}
			}
		})
	}
}

// Subs share the workspace's quota, may not overlap, are judged by the
// deny list where they are, and a checkpoint of the whole workspace
// splits into their parts and grafts back.
func TestSubRules(t *testing.T) {
	w, err := memfs.New(memfs.WithLimits(memfs.Limits{MaxTotalBytes: 100}), memfs.WithDeny("api/secret/**"))
	must(t, err)
	api, err := w.Sub("api")
	must(t, err)
	web, err := w.Sub("web")
	must(t, err)
	for _, dir := range []string{"api", "api/x", "", ".", "../x", ".git", "web/"} {
		if _, err := w.Sub(dir); err == nil {
			t.Errorf("Sub(%q) was allowed", dir)
		}
	}
	if fi, err := w.Stat("api"); err != nil || !fi.IsDir() {
		t.Errorf("an empty Sub's directory: %v, %v", fi, err)
	}
	if len(w.Changes()) != 0 || len(api.Changes()) != 0 {
		t.Errorf("making Subs is a change: %v", w.Changes())
	}
	must(t, w.WriteFile("api/big", make([]byte, 80), 0o644))
	api.SetBase(api.Snapshot())
	if err := w.WriteFile("web/more", make([]byte, 30), 0o644); !errors.Is(err, memfs.ErrQuotaExceeded) {
		t.Errorf("web wrote past what api left of the quota: %v", err)
	}
	if err := api.CheckDeny("secret/key"); err == nil {
		t.Errorf("api/secret/key passed the deny list")
	}
	if err := web.CheckDeny("secret/key"); err != nil {
		t.Errorf("web/secret/key refused: %v", err)
	}
	if _, refused, err := api.NewSnapshot([]memfs.SeedFile{{Path: "secret/k", Mode: 0o644, Data: []byte("k")}}); err != nil || len(refused) != 1 || refused[0].Path != "secret/k" {
		t.Errorf("a seed of api/secret/k: %v, %v", refused, err)
	}

	must(t, w.WriteFile("web/page", []byte("one"), 0o644))
	cp, err := w.Checkpoint("cp")
	must(t, err)
	must(t, w.WriteFile("web/page", []byte("two"), 0o644))
	snap, _, err := w.CheckpointSnapshot(cp.Name)
	must(t, err)
	part := web.Of(snap)
	if e, ok := part.Lookup("page"); !ok {
		t.Fatalf("the checkpoint's web part lacks page")
	} else if data, _ := e.Content(); string(data) != "one" {
		t.Errorf("the checkpoint's web/page = %q", data)
	}
	back, err := web.Graft(w.Snapshot(), part)
	must(t, err)
	if e, ok := back.Lookup("web/page"); !ok {
		t.Errorf("grafted back: no web/page")
	} else if data, _ := e.Content(); string(data) != "one" {
		t.Errorf("grafted back: web/page = %q", data)
	}
	if _, ok := back.Lookup("api/big"); !ok {
		t.Errorf("grafting web lost api/big")
	}
}
