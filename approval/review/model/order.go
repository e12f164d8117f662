package model

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/approval"
)

// Order is the files in the order to review them: those with the highest
// risk flag first (high, then medium, then low), then the rest, each rank
// in the push's order (commit by commit, file by file). A flag names a
// file by path, and a commit by id when it is about one.
func (m *Review) Order() []FileRef { return slices.Clone(m.order) }

// Severity is the highest flag on file f (0: none).
func (m *Review) Severity(f FileRef) approval.Severity {
	file := m.File(f)
	if file == nil {
		return 0
	}
	var s approval.Severity
	for _, fl := range m.Flags(f) {
		s = max(s, fl.Severity)
	}
	return s
}

// Flags are the request's flags on file f: on its path, in any commit or
// in its own (a flag naming a commit by a prefix of its id).
func (m *Review) Flags(f FileRef) []approval.Flag {
	file := m.File(f)
	if file == nil {
		return nil
	}
	id := m.Commits[f.Commit].ID.String()
	var out []approval.Flag
	for _, fl := range m.Request.Flags {
		if fl.Path != file.Path {
			continue
		}
		if fl.Commit != "" && !m.Commits[f.Commit].ID.IsZero() && !strings.HasPrefix(id, fl.Commit) {
			continue
		}
		out = append(out, fl)
	}
	return out
}

func (m *Review) rank() []FileRef {
	var out []FileRef
	for ci, c := range m.Commits {
		for fi := range c.Files {
			out = append(out, FileRef{ci, fi})
		}
	}
	if len(m.Request.Flags) == 0 {
		return out
	}
	sev := make(map[FileRef]approval.Severity)
	for _, f := range out {
		if s := m.Severity(f); s != 0 {
			sev[f] = s
		}
	}
	slices.SortStableFunc(out, func(a, b FileRef) int { return int(sev[b]) - int(sev[a]) })
	return out
}

// HunkOrder is every hunk (a file without hunks as its Hunk -1) in the
// order to pick them: Order's files, each file's hunks in order.
func (m *Review) HunkOrder() []Ref {
	var out []Ref
	for _, f := range m.order {
		file := m.File(f)
		if len(file.Hunks) == 0 {
			out = append(out, Ref{f.Commit, f.File, -1})
		}
		for hi := range file.Hunks {
			out = append(out, Ref{f.Commit, f.File, hi})
		}
	}
	return out
}

// Key names file f's change for its viewed mark: the same target, path
// and change (its header names the blobs on both sides; its hunks are
// what is shown) in a later request has the same key. It is made on first
// use.
func (m *Review) Key(f FileRef) string {
	file := m.File(f)
	if file == nil {
		return ""
	}
	if file.key == "" {
		file.key = fileKey(m.Request.Target, file)
	}
	return file.key
}

// fileKey is a file's key: the target, the path and the change, hashed.
func fileKey(target string, f *File) string {
	h := sha256.New()
	var buf [512]byte
	for _, s := range []string{target, "\x00", f.Path, "\x00", f.Header} {
		writeString(h, s, buf[:])
	}
	for _, hk := range f.Hunks {
		writeString(h, hk.Text, buf[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// writeString hashes s through buf, a piece at a time: []byte(s) would
// copy the whole of a big file's diff.
func writeString(h hash.Hash, s string, buf []byte) {
	for s != "" {
		n := copy(buf, s)
		h.Write(buf[:n])
		s = s[n:]
	}
}

// SetViewed marks file f viewed, or not.
func (m *Review) SetViewed(f FileRef, viewed bool) {
	file := m.File(f)
	if file == nil {
		return
	}
	if viewed {
		m.viewed[m.Key(f)] = true
	} else {
		delete(m.viewed, m.Key(f))
	}
}

// Viewed reports whether file f is marked viewed.
func (m *Review) Viewed(f FileRef) bool {
	return len(m.viewed) > 0 && m.viewed[m.Key(f)]
}

// ViewedKeys are the keys of the files marked viewed in this review, for
// the reviewer's state to keep; LoadViewed marks again the files of a
// later review whose change has one of them.
func (m *Review) ViewedKeys() []string {
	var out []string
	for _, f := range m.order {
		if k := m.Key(f); m.viewed[k] {
			out = append(out, k)
		}
	}
	return out
}

// LoadViewed marks viewed the files whose key is in keys.
func (m *Review) LoadViewed(keys map[string]bool) {
	for _, f := range m.order {
		if k := m.Key(f); keys[k] {
			m.viewed[k] = true
		}
	}
}

// Keys are the keys of all the files shown, viewed or not: a store drops
// a file's old mark when the file is shown again unviewed.
func (m *Review) Keys() []string {
	var out []string
	for _, f := range m.order {
		out = append(out, m.Key(f))
	}
	return out
}
