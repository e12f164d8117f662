package staging

import "github.com/airlock-dev/airlock/memfs"

// Workspace is what an Area needs of the worker's filesystem: a whole
// memfs.Workspace, or a memfs.Sub (one repository's directory of a
// multi-repository session's workspace). The Area keeps its base at the tip
// of its chain, so its unstaged changes are what Changes reports.
type Workspace interface {
	Base() *memfs.Snapshot
	Changes() []memfs.Change
	Snapshot() *memfs.Snapshot
	SnapshotChanges() (*memfs.Snapshot, []memfs.Change)
	NewSnapshot(files []memfs.SeedFile) (*memfs.Snapshot, []memfs.Refused, error)
	Overlay(parent, src *memfs.Snapshot, paths []string) (*memfs.Snapshot, error)
	Seed(files []memfs.SeedFile) ([]memfs.Refused, error)
	SetBase(base *memfs.Snapshot, keep ...*memfs.Snapshot)
	Restore(s *memfs.Snapshot) error
	ApplyFrom(src *memfs.Snapshot, paths []string) error
	CheckDeny(p string) error
}

var (
	_ Workspace = (*memfs.Workspace)(nil)
	_ Workspace = (*memfs.Sub)(nil)
)
