package rawtree_test

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/staging/rawtree"
)

// encode is go-git's encoding of a tree with entries, sorted as git sorts
// them (a directory's name as if it ended in "/").
func encode(t *testing.T, entries []object.TreeEntry) []byte {
	t.Helper()
	es := append([]object.TreeEntry(nil), entries...)
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(es, func(i, j int) bool { return key(es[i]) < key(es[j]) })
	o := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: es}).Encode(o); err != nil {
		t.Fatal(err)
	}
	r, _ := o.Reader()
	data, _ := io.ReadAll(r)
	return data
}

// Splice writes, byte for byte, what encoding the changed tree anew
// would: git's order kept where a directory and files share a prefix
// ("a", "a.txt", "a/" sort as git sorts them), entries found by Find.
func TestSpliceIsGitsEncoding(t *testing.T) {
	h := func(s string) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, []byte(s)) }
	old := []object.TreeEntry{
		{Name: "a.txt", Mode: filemode.Regular, Hash: h("1")},
		{Name: "a", Mode: filemode.Dir, Hash: h("2")},
		{Name: "b", Mode: filemode.Executable, Hash: h("3")},
		{Name: "z", Mode: filemode.Symlink, Hash: h("4")},
	}
	idx, err := rawtree.Parse(encode(t, old))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Release()
	if idx.Len() != 4 {
		t.Fatalf("Len = %d", idx.Len())
	}
	ia, ib := idx.Find("a"), idx.Find("b")
	if ia < 0 || ib < 0 || idx.Mode(ia) != filemode.Dir || idx.Hash(ib) != h("3") || idx.Find("nope") != -1 {
		t.Fatalf("Find: a %d, b %d", ia, ib)
	}
	drop := []int{ia, ib} // ascending, as Splice takes them
	sort.Ints(drop)
	add := []rawtree.Entry{
		{Name: "a-b", Mode: filemode.Regular, Hash: h("5")},
		{Name: "a", Mode: filemode.Regular, Hash: h("6")}, // the directory becomes a file
		{Name: "a0", Mode: filemode.Dir, Hash: h("7")},
	}
	got := idx.Splice(drop, add)
	want := encode(t, []object.TreeEntry{old[0], old[3],
		{Name: "a-b", Mode: filemode.Regular, Hash: h("5")}, {Name: "a", Mode: filemode.Regular, Hash: h("6")}, {Name: "a0", Mode: filemode.Dir, Hash: h("7")}})
	if !bytes.Equal(got, want) {
		t.Errorf("Splice:\n%q\nwant\n%q", got, want)
	}
}

func TestParseRefusesWhatIsNotATree(t *testing.T) {
	for _, data := range []string{"100644 a", "10064x a\x00" + string(make([]byte, 20)), "100644 a\x00short"} {
		if _, err := rawtree.Parse([]byte(data)); !errors.Is(err, rawtree.ErrBadTree) {
			t.Errorf("%q: %v, want ErrBadTree", data, err)
		}
	}
}
