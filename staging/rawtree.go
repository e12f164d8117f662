package staging

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// ErrBadTree: a tree object's bytes are not a tree.
var ErrBadTree = errors.New("malformed tree")

// treeEnt is one entry of a tree as its bytes hold it: its name still
// points into the tree object's content, so reading a tree of a thousand
// entries makes no thousand strings.
type treeEnt struct {
	name []byte
	mode filemode.FileMode
	hash plumbing.Hash
}

// gitLess orders entries as git does: by name, a directory's name
// compared as if it ended in "/".
func gitLess(a, b treeEnt) bool {
	an, bn := a.name, b.name
	n := min(len(an), len(bn))
	if c := bytes.Compare(an[:n], bn[:n]); c != 0 {
		return c < 0
	}
	ac, bc := byte(0), byte(0)
	if len(an) > n {
		ac = an[n]
	} else if a.mode == filemode.Dir {
		ac = '/'
	}
	if len(bn) > n {
		bc = bn[n]
	} else if b.mode == filemode.Dir {
		bc = '/'
	}
	return ac < bc
}

// treeContent returns a tree object's content without copying it when
// the store can.
func (s *Store) treeContent(h plumbing.Hash) ([]byte, error) {
	o, err := s.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	if r, ok := o.(*rawObject); ok {
		return r.data, nil
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// parseTree reads a tree object's entries in their order.
func parseTree(data []byte) ([]treeEnt, error) {
	out := make([]treeEnt, 0, len(data)/32+1) // an entry is about 30 bytes and more
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("%w: a tree entry without a mode", ErrBadTree)
		}
		m, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: a tree entry's mode %q", ErrBadTree, data[:sp])
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+20 {
			return nil, fmt.Errorf("%w: a tree entry cut short", ErrBadTree)
		}
		e := treeEnt{name: data[:nul:nul], mode: filemode.FileMode(m)}
		copy(e.hash[:], data[nul+1:nul+21])
		out = append(out, e)
		data = data[nul+21:]
	}
	return out, nil
}

// encodeTree writes entries (in git's order) as a tree object's content.
func encodeTree(entries []treeEnt) []byte {
	n := 0
	for _, e := range entries {
		n += 8 + len(e.name) + 21
	}
	buf := make([]byte, 0, n)
	for _, e := range entries {
		buf = strconv.AppendUint(buf, uint64(e.mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.name...)
		buf = append(buf, 0)
		buf = append(buf, e.hash[:]...)
	}
	return buf
}

// findEntry returns the index of the entry named name in sorted entries,
// whichever its kind, or -1.
func findEntry(entries []treeEnt, name string) int {
	for _, mode := range []filemode.FileMode{filemode.Regular, filemode.Dir} {
		key := treeEnt{name: []byte(name), mode: mode}
		i := sort.Search(len(entries), func(i int) bool { return !gitLess(entries[i], key) })
		if i < len(entries) && string(entries[i].name) == name {
			return i
		}
	}
	return -1
}
