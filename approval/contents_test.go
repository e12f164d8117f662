package approval

import (
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// blobMap is a BlobReader over a map.
type blobMap map[plumbing.Hash]string

func (m blobMap) ReadBlob(h plumbing.Hash) ([]byte, error) {
	s, ok := m[h]
	if !ok {
		return nil, errors.New("no such object")
	}
	return []byte(s), nil
}

// Contents reads each side of a push from the blob reader it is given:
// the old side what the ref has, the new what the push brings; a path a
// side lacks, or a blob that cannot be read, is not there.
func TestContentsReadsEachSide(t *testing.T) {
	a, b, gone := plumbing.NewHash("aa"), plumbing.NewHash("bb"), plumbing.NewHash("cc")
	c := Contents(blobMap{a: "old", b: "new"},
		map[string]plumbing.Hash{"f": a, "d": a},
		map[string]plumbing.Hash{"f": b, "n": b, "g": gone})
	for _, tc := range []struct {
		path    string
		newSide bool
		want    string
		ok      bool
	}{
		{"f", false, "old", true},
		{"f", true, "new", true},
		{"d", true, "", false},
		{"n", false, "", false},
		{"n", true, "new", true},
		{"g", true, "", false},
	} {
		got, ok := c(tc.path, tc.newSide)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("%s (new side %v): %q, %v; want %q, %v", tc.path, tc.newSide, got, ok, tc.want, tc.ok)
		}
	}
}
