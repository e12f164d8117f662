package mirror

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/memfs"
)

// Promote makes lower hold after (the workspace once a run's changes came
// in, the run having started on start, which lower holds) by moving what
// the run wrote from upper into lower, rather than writing it all again
// at the next Sync: each of changes (as Changes read them) that after
// holds exactly is renamed into lower (a file or a link), removed (a
// removal) or made (a directory). Whatever else changed from start to
// after (a change the workspace refused, a path another tool changed
// meanwhile) is written at the next Sync. Reset follows it.
func (m *Mirror) Promote(start, after *memfs.Snapshot, changes []Change) {
	if m.synced == nil || !m.synced.Same(start) {
		return // lower is not what the run saw: the next Sync diffs as usual
	}
	promoted := map[string]bool{}
	var gone []string                 // directories removed whole, with what was in them
	dirs := map[string]bool{"": true} // directories of lower known to be directories
	// The changes come in path order: the files of one directory one
	// after the other, each renamed between the same two directories.
	up, low := m.dirCache(), m.dirCache()
	defer up.close()
	defer low.close()
	for i := 0; i < len(changes); i++ {
		c := changes[i]
		rel := lowerDir + "/" + c.Path
		switch c.Kind {
		case Removed:
			if _, ok := after.Lookup(c.Path); ok || after.IsDir(c.Path) {
				continue
			}
			low.close()
			if m.discard(rel) == nil {
				promoted[c.Path] = true
				gone = append(gone, c.Path+"/")
			}
		case MadeDir, Replaced:
			if !after.IsDir(c.Path) {
				continue
			}
			low.close()
			if st, err := m.lstat(rel); err == nil && (c.Kind == Replaced || st.Mode&unix.S_IFMT != unix.S_IFDIR) {
				// If it stays, making the directory in its place
				// fails and says so.
				_ = m.discard(rel)
			}
			if n := m.promoteDir(after, changes[i:], dirs, promoted); n > 0 {
				// A directory the run made, which the workspace took
				// whole: moved in one rename.
				up.close()
				i += n - 1
				continue
			}
			if m.mkdir(rel) == nil {
				dirs[c.Path] = true
			}
		case Wrote, Linked:
			if c.Other != "" || !holds(after, c) || m.lowerDir(path.Dir(c.Path), dirs, low) != nil {
				continue
			}
			parent, name := path.Split(c.Path)
			ufd, err := up.get(upperDir + "/" + parent)
			if err != nil {
				continue
			}
			lfd, err := low.get(lowerDir + "/" + parent)
			if err != nil {
				continue
			}
			if unix.Renameat(ufd, name, lfd, name) != nil {
				// A directory in the way (a rename replaces anything else).
				if removeAllAt(lfd, name) != nil || unix.Renameat(ufd, name, lfd, name) != nil {
					continue
				}
			}
			// The workspace keeps 0644 or 0755: lower is what it holds.
			if e, _ := after.Lookup(c.Path); c.Kind == Wrote && c.Mode.Perm() != e.Mode.Perm() && chmodAt(lfd, name, uint32(e.Mode.Perm())) != nil {
				continue
			}
			promoted[c.Path] = true
		}
	}
	if m.redo == nil {
		m.redo = map[string]bool{}
	}
	sort.Strings(gone)
	for _, d := range start.Diff(after) {
		// gone is sorted, so the one directory that may hold d.Path is
		// the last one not after it.
		i := sort.SearchStrings(gone, d.Path)
		if !promoted[d.Path] && !(i > 0 && strings.HasPrefix(d.Path, gone[i-1])) {
			m.redo[d.Path] = true
		}
	}
	m.synced = after
}

// promoteDir moves the directory cs[0] made by the run, with everything in
// it, from upper into lower in one rename, when lower has nothing there
// (it was discarded, or never was) and after holds exactly every file and
// link in it. It returns how many of cs it promoted (0: none, the caller
// goes entry by entry).
func (m *Mirror) promoteDir(after *memfs.Snapshot, cs []Change, dirs, promoted map[string]bool) int {
	d := cs[0]
	prefix := d.Path + "/"
	n := 1
	for n < len(cs) && strings.HasPrefix(cs[n].Path, prefix) {
		c := cs[n]
		switch c.Kind {
		case Wrote, Linked:
			if c.Other != "" || !holds(after, c) {
				return 0
			}
			if e, _ := after.Lookup(c.Path); c.Kind == Wrote && c.Mode.Perm() != e.Mode.Perm() {
				return 0
			}
		case MadeDir:
			if !after.IsDir(c.Path) {
				return 0
			}
		default:
			return 0 // a removal under it: lower had something here
		}
		n++
	}
	if _, err := m.lstat(lowerDir + "/" + d.Path); err != unix.ENOENT || m.lowerDir(path.Dir(d.Path), dirs, nil) != nil {
		return 0
	}
	if m.rename(upperDir+"/"+d.Path, lowerDir+"/"+d.Path) != nil {
		return 0
	}
	dirs[d.Path] = true
	for _, c := range cs[:n] {
		promoted[c.Path] = true
		if c.Kind == MadeDir {
			dirs[c.Path] = true
		}
	}
	return n
}

// holds reports whether s holds exactly what the run's change c wrote.
func holds(s *memfs.Snapshot, c Change) bool {
	e, ok := s.Lookup(c.Path)
	if !ok || e.Lazy() || e.Size != int64(len(c.Data)) || (c.Kind == Linked) != (e.Mode&fs.ModeSymlink != 0) {
		return false
	}
	data, err := e.Content()
	return err == nil && bytes.Equal(data, c.Data)
}

// lowerDir makes sure dir (relative to lower) is a directory of lower,
// replacing a file or link in the way; dirs remembers what is known to be
// one. Removing something drops what low holds (nil: nothing).
func (m *Mirror) lowerDir(dir string, dirs map[string]bool, low *dirCache) error {
	if dir == "." {
		dir = ""
	}
	if dirs[dir] {
		return nil
	}
	if err := m.lowerDir(path.Dir(dir), dirs, low); err != nil {
		return err
	}
	rel := lowerDir + "/" + dir
	parent, name, done, err := parentAt(m.fd, rel)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	defer done()
	if st, err := lstatAt(parent, name); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		low.close()
		_ = removeAt(parent, name) // if it stays, mkdirAt fails and says so
	}
	if err := m.mkdirAt(parent, name, rel); err != nil {
		return err
	}
	dirs[dir] = true
	return nil
}
