package rawtree

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// ErrBadTree: a tree object's bytes are not a tree.
var ErrBadTree = errors.New("malformed tree")

// rawEnt locates one entry in a tree object's bytes. An index of them is
// all a change to a wide tree needs to read: no name is copied and no
// pointer is stored, so indexing a directory of a thousand entries is one
// pass over its bytes and one small allocation.
type rawEnt struct {
	off  uint32 // where the entry starts (its mode)
	name uint32 // where its name starts
	end  uint32 // where its name ends (the NUL); the 20-byte hash follows
	dir  bool
}

// Index is a tree object's content with the index of its entries.
type Index struct {
	data []byte
	ents []rawEnt
}

// Len is how many entries the tree has.
func (t *Index) Len() int { return len(t.ents) }

// Name is entry i's name, in the tree's bytes (not to be modified).
func (t *Index) Name(i int) []byte { return t.data[t.ents[i].name:t.ents[i].end] }

// Mode is entry i's mode.
func (t *Index) Mode(i int) filemode.FileMode {
	m, _ := parseMode(t.data[t.ents[i].off : t.ents[i].name-1])
	return m
}

// Hash is entry i's object id.
func (t *Index) Hash(i int) (h plumbing.Hash) {
	e := t.ents[i].end + 1
	copy(h[:], t.data[e:e+20])
	return h
}

// start is where entry i begins; len(ents) is the end of the content.
func (t *Index) start(i int) int {
	if i == len(t.ents) {
		return len(t.data)
	}
	return int(t.ents[i].off)
}

// less orders entries as git does: by name, a directory's name
// compared as if it ended in "/".
func less(an []byte, aDir bool, bn []byte, bDir bool) bool {
	n := min(len(an), len(bn))
	if c := bytes.Compare(an[:n], bn[:n]); c != 0 {
		return c < 0
	}
	ac, bc := byte(0), byte(0)
	if len(an) > n {
		ac = an[n]
	} else if aDir {
		ac = '/'
	}
	if len(bn) > n {
		bc = bn[n]
	} else if bDir {
		bc = '/'
	}
	return ac < bc
}

// parseMode reads a tree entry's octal mode.
func parseMode(b []byte) (filemode.FileMode, bool) {
	if len(b) == 0 || len(b) > 7 {
		return 0, false
	}
	var m uint32
	for _, c := range b {
		if c < '0' || c > '7' {
			return 0, false
		}
		m = m<<3 | uint32(c-'0')
	}
	return filemode.FileMode(m), true
}

// indexes keeps index slices between uses: a fresh one for every tree
// edited would be new memory each time (and touching new memory, not
// building the index, was most of what indexing cost).
var indexes = sync.Pool{New: func() any { return new([]rawEnt) }}

// Parse indexes a tree object's entries in their order, checking that
// each is well formed. The caller hands the index back with release.
func Parse(data []byte) (Index, error) {
	if len(data) > math.MaxUint32 {
		return Index{}, fmt.Errorf("%w: a tree of %d bytes", ErrBadTree, len(data))
	}
	ents := (*indexes.Get().(*[]rawEnt))[:0]
	for off := 0; off < len(data); {
		rest := data[off:]
		sp := bytes.IndexByte(rest[:min(len(rest), 8)], ' ')
		if sp < 0 {
			return Index{}, fmt.Errorf("%w: a tree entry without a mode", ErrBadTree)
		}
		m, ok := parseMode(rest[:sp])
		if !ok {
			return Index{}, fmt.Errorf("%w: a tree entry's mode %q", ErrBadTree, rest[:sp])
		}
		nul := bytes.IndexByte(rest[sp+1:], 0)
		if nul < 0 || len(rest) < sp+1+nul+1+20 {
			return Index{}, fmt.Errorf("%w: a tree entry cut short", ErrBadTree)
		}
		name := off + sp + 1
		ents = append(ents, rawEnt{off: uint32(off), name: uint32(name), end: uint32(name + nul), dir: m == filemode.Dir})
		off = name + nul + 1 + 20
	}
	return Index{data: data, ents: ents}, nil
}

// release hands t's index back for reuse; t is empty after it.
func (t *Index) Release() {
	if cap(t.ents) > 0 {
		ents := t.ents[:0]
		indexes.Put(&ents)
	}
	*t = Index{}
}

// find returns the index of the entry named name, whichever its kind, or
// -1: a binary search for it as a file, then as a directory.
func (t *Index) Find(name string) int {
	key := []byte(name)
	for _, dir := range []bool{false, true} {
		i := sort.Search(len(t.ents), func(i int) bool { return !less(t.Name(i), t.ents[i].dir, key, dir) })
		if i < len(t.ents) && string(t.Name(i)) == name {
			return i
		}
	}
	return -1
}

// Entry is an entry a change puts into a tree.
type Entry struct {
	Name string
	Mode filemode.FileMode
	Hash plumbing.Hash
	at   int // the index of the first old entry that sorts after it
}

func (e *Entry) encodedLen() int {
	return len(strconv.FormatUint(uint64(e.Mode), 8)) + 1 + len(e.Name) + 1 + 20
}

// splice writes t with the entries at drop (ascending indexes) left out
// and add put in: the unchanged entries are copied as runs of bytes, never
// decoded and encoded again.
func (t *Index) Splice(drop []int, add []Entry) []byte {
	for i := range add {
		e := &add[i]
		dir := e.Mode == filemode.Dir
		key := []byte(e.Name)
		e.at = sort.Search(len(t.ents), func(i int) bool { return !less(t.Name(i), t.ents[i].dir, key, dir) })
	}
	sort.Slice(add, func(a, b int) bool {
		return less([]byte(add[a].Name), add[a].Mode == filemode.Dir, []byte(add[b].Name), add[b].Mode == filemode.Dir)
	})
	size := len(t.data)
	for _, i := range drop {
		size -= t.start(i+1) - t.start(i)
	}
	for i := range add {
		size += add[i].encodedLen()
	}
	buf := make([]byte, 0, size)
	c := 0 // the old content is copied up to here
	for len(drop) > 0 || len(add) > 0 {
		if len(add) > 0 && (len(drop) == 0 || add[0].at <= drop[0]) {
			e := &add[0]
			buf = append(buf, t.data[c:t.start(e.at)]...)
			c = t.start(e.at)
			buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
			buf = append(buf, ' ')
			buf = append(buf, e.Name...)
			buf = append(buf, 0)
			buf = append(buf, e.Hash[:]...)
			add = add[1:]
			continue
		}
		buf = append(buf, t.data[c:t.start(drop[0])]...)
		c = t.start(drop[0] + 1)
		drop = drop[1:]
	}
	return append(buf, t.data[c:]...)
}
