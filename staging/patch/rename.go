package patch

import (
	"slices"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/staging/internal/linediff"
)

// RenameLimit is git's diff.renameLimit default: above RenameLimit²
// pairs of created and source files, only exact renames are looked for.
const RenameLimit = 1000

// The scores of git's rename detection: similarity is out of maxScore,
// and a pair below minScore (git's default -M50%) is not a rename.
const (
	maxScore = 60000
	minScore = 30000
)

// Renames finds the renames and copies among changes (sorted by path, as
// Trees gives them) as `git diff -M -C` does, with git's rules
// (diffcore-rename): exact renames first (the same blob; a source not
// used yet, then one of the same base name, preferred), then, when
// created files times sources is within limit² (limit <= 0: RenameLimit),
// pairs of regular files at least 50% similar by git's measure (bytes of
// the created file found in the source, in runs of up to 64 bytes ending
// at a newline, CR of CRLF not counted in text), the most similar first.
// Sources are the deleted files and, for copies, the files this change
// modifies. A created file made from a deleted one is a Rename, its
// deletion gone from the list; one made from a file that stays, or from a
// deleted file another rename already takes, is a Copy (of sources used
// more than once, the last destination in path order is the rename, as
// git says). read gives a blob's content; a blob it cannot read is no
// source or destination of an inexact rename. The list stays in path
// order, a rename or copy in its new path's place.
func Renames(changes []Change, read func(plumbing.Hash) ([]byte, error), limit int) []Change {
	if limit <= 0 {
		limit = RenameLimit
	}
	var srcs []*renameSrc
	var dsts []*renameDst
	for i, c := range changes {
		switch c.Op {
		case change.Create:
			dsts = append(dsts, &renameDst{at: i, path: c.Path, mode: c.NewMode, hash: c.NewHash, src: -1})
		case change.Delete:
			srcs = append(srcs, &renameSrc{at: i, path: c.Path, mode: c.OldMode, hash: c.OldHash})
		case change.Update:
			// A file that stays is a source of copies only: it counts as
			// used once already (git's rename_used).
			srcs = append(srcs, &renameSrc{at: i, path: c.Path, mode: c.OldMode, hash: c.OldHash, used: 1, stays: true})
		}
	}
	if len(srcs) == 0 || len(dsts) == 0 {
		return changes
	}
	left := exactRenames(srcs, dsts)
	if left > 0 && !(left > limit && len(srcs) > limit) && uint64(left)*uint64(len(srcs)) <= uint64(limit)*uint64(limit) {
		inexactRenames(srcs, dsts, read)
	}
	return collapse(changes, srcs, dsts)
}

type renameSrc struct {
	at    int // index in the changes
	path  string
	mode  filemode.FileMode
	hash  plumbing.Hash
	used  int  // git's rename_used: how many destinations take it (+1 when it stays)
	stays bool // modified, not deleted: a source of copies
	fp    *fingerprint
}

type renameDst struct {
	at    int
	path  string
	mode  filemode.FileMode
	hash  plumbing.Hash
	src   int // index in srcs, -1: none
	score int // out of maxScore
	fp    *fingerprint
}

// exactRenames pairs each created file with a source of the same blob,
// as git's find_identical_files: one not used yet first, then one with
// the same base name; the first in path order among equals. It returns
// how many created files are left.
func exactRenames(srcs []*renameSrc, dsts []*renameDst) int {
	byHash := map[plumbing.Hash][]int{}
	for i, s := range srcs {
		byHash[s.hash] = append(byHash[s.hash], i)
	}
	left := 0
	for _, d := range dsts {
		best, bestScore := -1, -1
		tries := 100 // git gives up past 100 identical alternatives
		for _, i := range byHash[d.hash] {
			s := srcs[i]
			if (!isReg(s.mode) || !isReg(d.mode)) && s.mode != d.mode {
				continue
			}
			score := 0
			if s.used == 0 {
				score = 1
			}
			if basenameSame(s.path, d.path) {
				score++
			}
			if score > bestScore {
				best, bestScore = i, score
				if score == 2 {
					break
				}
			}
			if tries--; tries == 0 {
				break
			}
		}
		if best < 0 {
			left++
			continue
		}
		d.src, d.score = best, maxScore
		srcs[best].used++
	}
	return left
}

// candidate is one entry of git's similarity matrix.
type candidate struct {
	src, dst  int // dst -1: an empty slot
	score     int
	nameScore int
}

// worse reports whether a sorts after b in git's score_compare: empty
// slots last, then by score, then by same base name, both descending.
func worse(a, b candidate) bool {
	switch {
	case a.dst < 0:
		return b.dst >= 0
	case b.dst < 0:
		return false
	case a.score == b.score:
		return b.nameScore > a.nameScore
	}
	return b.score > a.score
}

// candidatesPerDst is git's NUM_CANDIDATE_PER_DST.
const candidatesPerDst = 4

// inexactRenames pairs the created files left with sources at least 50%
// similar: git keeps each one's four best sources, sorts them all, and
// takes them best first, renames (sources not used) before copies.
func inexactRenames(srcs []*renameSrc, dsts []*renameDst, read func(plumbing.Hash) ([]byte, error)) {
	var mx []candidate
	for di, d := range dsts {
		if d.src >= 0 {
			continue
		}
		if d.fp == nil && isReg(d.mode) {
			d.fp = newFingerprint(d.hash, read)
		}
		m := make([]candidate, candidatesPerDst)
		for j := range m {
			m[j].dst = -1
		}
		for si, s := range srcs {
			if s.fp == nil && isReg(s.mode) {
				s.fp = newFingerprint(s.hash, read)
			}
			o := candidate{src: si, dst: di, score: similarity(s.mode, d.mode, s.fp, d.fp), nameScore: b2i(basenameSame(s.path, d.path))}
			w := 0
			for j := 1; j < candidatesPerDst; j++ {
				if worse(m[j], m[w]) {
					w = j
				}
			}
			if worse(m[w], o) {
				m[w] = o
			}
		}
		mx = append(mx, m...)
	}
	sort.SliceStable(mx, func(i, j int) bool { return worse(mx[j], mx[i]) })
	for _, copies := range []bool{false, true} {
		for _, c := range mx {
			if c.dst < 0 || c.score < minScore {
				break
			}
			d, s := dsts[c.dst], srcs[c.src]
			if d.src >= 0 || (!copies && s.used > 0) {
				continue
			}
			d.src, d.score = c.src, c.score
			s.used++
		}
	}
}

// collapse rewrites changes with the pairs found: each paired created
// file becomes a rename or copy, and a deleted source some destination
// took is gone.
func collapse(changes []Change, srcs []*renameSrc, dsts []*renameDst) []Change {
	byAt := map[int]*renameDst{}
	for _, d := range dsts {
		if d.src >= 0 {
			byAt[d.at] = d
		}
	}
	if len(byAt) == 0 {
		return changes
	}
	gone := map[int]bool{}
	for _, s := range srcs {
		if !s.stays && s.used > 0 {
			gone[s.at] = true
		}
	}
	out := make([]Change, 0, len(changes))
	for i, c := range changes {
		if gone[i] {
			continue
		}
		d := byAt[i]
		if d == nil {
			out = append(out, c)
			continue
		}
		s := srcs[d.src]
		c.Op, c.From, c.OldMode, c.OldHash = change.Rename, s.path, s.mode, s.hash
		c.Similarity = d.score * 100 / maxScore
		// git's diff_resolve_rename_copy: in path order, each use but the
		// last of a source is a copy; a source that stays is only copied.
		if s.used--; s.used > 0 {
			c.Op = change.Copy
		}
		out = append(out, c)
	}
	return slices.Clip(out)
}

// basenameSame is git's basename_same: the two paths end in the same
// name after their last slash.
func basenameSame(a, b string) bool {
	i, j := len(a), len(b)
	for i > 0 && j > 0 {
		i, j = i-1, j-1
		if a[i] != b[j] {
			return false
		}
		if a[i] == '/' {
			return true
		}
	}
	return (i == 0 || a[i-1] == '/') && (j == 0 || b[j-1] == '/')
}

// isReg is S_ISREG: a file, executable or not.
func isReg(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fingerprint is what git's similarity needs of a blob: its size and the
// bytes it holds in each run's hash (diffcore-delta's spanhash).
type fingerprint struct {
	size  int
	spans map[uint32]uint64
}

// hashBase is diffcore-delta's HASHBASE.
const hashBase = 107927

// newFingerprint reads the blob and hashes its runs: up to 64 bytes each,
// ending at a newline; in text (not binary as git decides it) a CR
// before a LF is skipped, so a line-ending change alone keeps a file
// similar. nil when the blob cannot be read.
func newFingerprint(h plumbing.Hash, read func(plumbing.Hash) ([]byte, error)) *fingerprint {
	data, err := read(h)
	if err != nil {
		return nil
	}
	text := !linediff.IsBinary(data)
	fp := &fingerprint{size: len(data), spans: map[uint32]uint64{}}
	var acc1, acc2 uint32
	n := uint64(0)
	for i := 0; i < len(data); i++ {
		c := uint32(data[i])
		if text && c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			continue
		}
		old1 := acc1
		acc1 = (acc1 << 7) ^ (acc2 >> 25)
		acc2 = (acc2 << 7) ^ (old1 >> 25)
		acc1 += c
		if n++; n < 64 && c != '\n' {
			continue
		}
		fp.spans[(acc1+acc2*0x61)%hashBase] += n
		n, acc1, acc2 = 0, 0, 0
	}
	if n > 0 {
		fp.spans[(acc1+acc2*0x61)%hashBase] += n
	}
	return fp
}

// similarity is git's estimate_similarity, out of maxScore: the bytes of
// dst found in src, over the larger size; 0 for anything but two regular
// files, or sizes too far apart to reach the minimum.
func similarity(sm, dm filemode.FileMode, src, dst *fingerprint) int {
	if !isReg(sm) || !isReg(dm) || src == nil || dst == nil {
		return 0
	}
	maxSize, baseSize := uint64(max(src.size, dst.size)), uint64(min(src.size, dst.size))
	if maxSize*(maxScore-minScore) < (maxSize-baseSize)*maxScore {
		return 0
	}
	if dst.size == 0 {
		return 0
	}
	var copied uint64
	for h, sc := range src.spans {
		copied += min(sc, dst.spans[h])
	}
	return int(copied * maxScore / maxSize)
}
