package rescue

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
	"github.com/airlock-dev/airlock/staging"
)

// Inspection is a saved session read back for a person, without resuming
// it: nothing is written, no target is opened, no request is offered. It
// is how airlock sessions show and export rescue a dead session's work.
type Inspection struct {
	store.Listed
	Base        plumbing.Hash // the commit the work stands on; zero if none
	Changes     []memfs.Change
	Staged      []*staging.Commit
	Checkpoints []memfs.CheckpointInfo
	Pushes      []PendingPush
	Published   map[string]string // commit -> where it went

	Live    *memfs.Snapshot // the workspace's tree
	Objects *staging.Store  // every object the journal holds
	Saved   time.Time       // when its last state record was written
	// Attach adds to a store the sources its lazy files are read from
	// (where they were pulled); nil when there are none.
	Attach func(*staging.Store)
}

// PendingPush is a push a saved session had in flight.
type PendingPush struct {
	Request string
	Commit  string
	Target  string
	Ref     string
	State   string
}

// Count sets the listing's summary from what the journal holds: its
// server died, and the summary it last wrote may be behind.
func (in *Inspection) Count() {
	in.Summary = store.Summary{Updated: in.Saved.UTC(), Changed: len(in.Changes), Staged: len(in.Staged),
		Checkpoints: len(in.Checkpoints), Pending: len(in.Pushes), Bytes: in.Bytes}
	in.NoState = false
}

// ErrExportTarget: where an export would write is not an empty directory.
var ErrExportTarget = errors.New("export needs a new or empty directory")

// ExportFiles writes the workspace's files, as the session last left
// them, into dir, which must not exist or be empty: regular files with
// their executable bit, symlinks, and empty directories. It returns how
// many files and symlinks it wrote, and the files it could not write
// because their content could not be read (a lazy file its repository no
// longer has): one of those does not stop the rest.
func (in *Inspection) ExportFiles(dir string) (int, []memfs.Refused, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return 0, nil, fmt.Errorf("%w: %s holds %d entries; name a new directory", ErrExportTarget, dir, len(ents))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, nil, err
	}
	var unread []memfs.Refused
	// Files of the base not read before the session ended are read from
	// where they were pulled.
	if in.Attach != nil {
		in.Attach(in.Objects)
	}
	defer in.Objects.CloseSources()
	n := 0
	var links []memfs.Delta
	for _, d := range memfs.DeltaOf(nil, in.Live) {
		full := filepath.Join(dir, filepath.FromSlash(d.Path))
		switch {
		case d.Mode.IsDir():
			if err := os.Mkdir(full, 0o755); err != nil {
				return n, unread, err
			}
		case d.Mode&fs.ModeSymlink != 0:
			links = append(links, d) // last: nothing is written through one
		default:
			perm := fs.FileMode(0o644)
			if d.Mode&0o100 != 0 {
				perm = 0o755
			}
			data := d.Data
			if d.Lazy {
				var err error
				if data, err = d.From.LoadBlob(d.ID); err != nil {
					unread = append(unread, memfs.Refused{Path: d.Path, Err: err})
					continue
				}
			}
			f, err := files.CreateFile(full, perm)
			if err != nil {
				return n, unread, err
			}
			_, err = f.Write(data)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return n, unread, err
			}
			n++
		}
	}
	for _, d := range links {
		if err := os.Symlink(string(d.Data), filepath.Join(dir, filepath.FromSlash(d.Path))); err != nil {
			return n, unread, err
		}
		n++
	}
	return n, unread, nil
}

// WriteBundle writes the staged commits as a git bundle (version 2) whose
// branch ref names the tip: `git fetch FILE REF` in a repository that has
// the base commit brings them in. It fails when nothing is staged.
func (in *Inspection) WriteBundle(w io.Writer, ref string) error {
	if len(in.Staged) == 0 {
		return errors.New("the session has no staged commits to bundle; export its files instead")
	}
	tip := in.Staged[len(in.Staged)-1]
	// What the base reaches, the receiving repository has already.
	have := map[plumbing.Hash]bool{}
	if !in.Base.IsZero() {
		in.Objects.Walk([]plumbing.Hash{in.Base}, func(plumbing.Hash, bool) bool { return false }, func(o plumbing.EncodedObject, deep bool) error {
			if deep {
				have[o.Hash()] = true
			}
			return nil
		})
	}
	var send []plumbing.Hash
	roots := make([]plumbing.Hash, len(in.Staged))
	for i, c := range in.Staged {
		roots[i] = c.ID
	}
	err := in.Objects.Walk(roots, func(h plumbing.Hash, deep bool) bool { return have[h] }, func(o plumbing.EncodedObject, deep bool) error {
		if deep {
			send = append(send, o.Hash())
		}
		return nil
	})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# v2 git bundle\n")
	if !in.Base.IsZero() {
		subject := ""
		if c, err := object.GetCommit(in.Objects, in.Base); err == nil {
			subject = strings.SplitN(c.Message, "\n", 2)[0]
		}
		fmt.Fprintf(bw, "-%s %s\n", in.Base, subject)
	}
	fmt.Fprintf(bw, "%s %s\n\n", tip.ID, ref)
	if _, err := packfile.NewEncoder(bw, in.Objects, false).Encode(send, 10); err != nil {
		return err
	}
	return bw.Flush()
}
