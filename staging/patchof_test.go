package staging_test

import (
	"testing"

	"github.com/airlock-dev/airlock/staging"
)

// EachFilePatchOf gives the patches of the paths kept only; EachFilePatch,
// of every path.
func TestEachFilePatchOfKeepsOnlyItsPaths(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.txt", "a\n")
	e.write(t, "b.txt", "b\n")
	c1, err := e.area.Stage(nil, "one")
	must(t, err)
	e.write(t, "a.txt", "A\n")
	e.write(t, "b.txt", "lost\n")
	c2, err := e.area.Stage(nil, "two")
	must(t, err)
	var got []string
	err = e.store.EachFilePatchOf(c1.Tree, c2.Tree, func(p string) bool { return p == "a.txt" }, func(f *staging.FilePatch) error {
		got = append(got, f.Path)
		if f.Unavailable != "" {
			t.Errorf("%s unavailable: %s", f.Path, f.Unavailable)
		}
		return nil
	})
	must(t, err)
	if len(got) != 1 || got[0] != "a.txt" {
		t.Errorf("patches of %v; want a.txt alone", got)
	}
	var all []string
	must(t, e.store.EachFilePatch(c1.Tree, c2.Tree, func(f *staging.FilePatch) error { all = append(all, f.Path); return nil }))
	if len(all) != 2 {
		t.Errorf("EachFilePatch gives %v; want both files", all)
	}
}
