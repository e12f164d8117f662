package worktree

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Kind is what a working tree holds at a path, as git sees it.
type Kind int

const (
	// Absent: nothing, an empty directory, or a path whose leading
	// directories are missing or go through a file or a symlink.
	Absent Kind = iota
	// Blob: a regular file or a symlink, hashed as git would store it.
	Blob
	// Dir: a directory with something in it.
	Dir
	// Other: a FIFO, a socket, a device, or a file that changed while
	// it was read. Never the push's.
	Other
)

// Entry is what Writer.Stat finds at a path.
type Entry struct {
	Kind    Kind
	Mode    filemode.FileMode // Regular, Executable or Symlink for a blob
	Hash    plumbing.Hash
	OnWay   bool // absent because something not a directory is on the way
	Blocked bool // and that is a regular file or a symlink
}

// Holds reports whether the entry is what a tree entry of mode and hash
// checks out as (mode zero: no entry). A directory is no file, as git sees
// it; a gitlink has no content in the working tree (airlock does not
// check out submodules), so any directory or nothing will do. With
// trustMode false (core.fileMode off), the executable bit is not compared,
// as git does not.
func (e Entry) Holds(mode filemode.FileMode, hash plumbing.Hash, trustMode bool) bool {
	switch mode {
	case 0, filemode.Submodule:
		return e.Kind == Absent || e.Kind == Dir
	}
	if e.Kind != Blob || e.Hash != hash || (e.Mode == filemode.Symlink) != (mode == filemode.Symlink) {
		return false
	}
	return !trustMode || e.Mode == filemode.Symlink || (e.Mode == filemode.Executable) == (mode == filemode.Executable)
}
