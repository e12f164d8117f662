package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/airlock-dev/airlock/internal/durable"
)

// A server holds its ledger open for as long as it runs, and the file can
// be removed or replaced under it (the state directory removed whole, a
// backup restored, another server writing it again). Records appended to
// a file no path names would be gone at the next start, and the requests
// and decisions they record with them. So each append first makes sure
// the file it holds is the one at the ledger's path, with that file
// locked (followPathLocked):
//
//   - the same file: nothing to do;
//   - no file there: the ledger is written again from the file still held
//     (every record it had, then this one), with an anchor at its head
//     keeping the cuts this Ledger knows of;
//   - another file there: another server wrote it again, or someone put
//     it there; it is the ledger now, and its chain and anchor say
//     whether it is whole (a ledger that lost records is written down as
//     cut by the append, as at any start).
//
// Every process appending to a ledger takes the lock of the file it holds
// before it looks, and writes the file again only while holding it, so of
// several servers holding a removed ledger one writes it again and the
// others follow it; none writes to the removed file after that.

// followPathLocked makes l.f the file at l.path, as above. l.f is locked
// (lockFile) and stays locked when it returns: the file it returns in is
// the one locked.
func (l *Ledger) followPathLocked() error {
	held, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	there, err := os.Lstat(l.path)
	switch {
	case err == nil && os.SameFile(held, there):
		return nil
	case err == nil:
		if !there.Mode().IsRegular() {
			return fmt.Errorf("ledger: %s is no longer the ledger file this server writes but a %s; move it aside, and the next record writes the ledger there again", l.path, there.Mode().Type())
		}
		f, err := openNoFollow(l.path)
		if err != nil {
			return fmt.Errorf("ledger: %s was replaced, and opening the new one failed: %w", l.path, err)
		}
		return l.switchTo(f)
	case errors.Is(err, fs.ErrNotExist):
		return l.writeAgainLocked()
	default:
		return fmt.Errorf("ledger: %w", err)
	}
}

// writeAgainLocked writes the ledger anew at l.path from the removed file
// l.f still holds, and its anchor at the head it holds.
func (l *Ledger) writeAgainLocked() error {
	dir := filepath.Dir(l.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ledger: %s was removed under the server, and its directory cannot be made again: %w", l.path, err)
	}
	tmp := l.path + ".again-" + strconv.Itoa(os.Getpid())
	err := copyWhole(tmp, l.f)
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err == nil {
		err = durable.SyncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp) // a half copy; the next append tries again
		return fmt.Errorf("ledger: %s was removed under the server, and writing it again failed: %w", l.path, err)
	}
	f, err := openNoFollow(l.path)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := l.switchTo(f); err != nil {
		return err
	}
	head, _, err := readHead(l.f)
	if err != nil {
		return err
	}
	if head.Hash == "" {
		return nil
	}
	// The anchor went with the ledger (they share a directory) or stayed:
	// either way it is written at the head now held, keeping the cuts
	// this Ledger has seen, so that the append does not take the removal
	// for a cut.
	if err := writeAnchor(l.path, Anchor{Seq: head.Seq, Hash: head.Hash, Cuts: l.cuts}); err != nil {
		return fmt.Errorf("ledger: anchor: %w", err)
	}
	return nil
}

// copyWhole writes a new file at p holding all of src, synced.
func copyWhole(p string, src *os.File) error {
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	st, err := src.Stat()
	if err == nil {
		_, err = io.Copy(out, io.NewSectionReader(src, 0, st.Size()))
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// switchTo makes f, the file now at l.path, the ledger this Ledger
// writes: locked before the file held is let go.
func (l *Ledger) switchTo(f *os.File) error {
	if err := lockFile(f); err != nil {
		_ = f.Close() // not taken
		return fmt.Errorf("ledger: lock: %w", err)
	}
	old := l.f
	l.f = f
	_ = unlockFile(old) // closing releases it anyway
	_ = old.Close()     // read only from here: nothing of it to flush
	return nil
}

// openNoFollow opens the ledger file at p for appending, not through a
// link.
func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDWR|os.O_APPEND|noFollow, 0)
}
