package targets

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets/ledgerhead"
)

// LedgerHead is a ledger's head as a target keeps it (see ledgerhead.Head).
type LedgerHead = ledgerhead.Head

// LedgerAheadError is RecordLedgerHead's answer when the target keeps a
// head at or past the one to write (see ledgerhead.AheadError).
type LedgerAheadError = ledgerhead.AheadError

// ErrNotLedgerHead: the ref holds something airlock did not write.
var ErrNotLedgerHead = ledgerhead.ErrNotHead

// LedgerRef is the ref under which targets keep the head of the ledger at
// path on host.
func LedgerRef(host, path string) string { return ledgerhead.Ref(host, path) }

// LedgerAt names the ledger at path on this machine as its ref is keyed.
func LedgerAt(path string) (host, abs string) { return ledgerhead.At(path) }

// RecordLedgerHead moves the ledger's ref in the repository forward to h:
// a new commit (its parent the one the ref held) written into the object
// database, and the ref moved from exactly the old commit by git
// update-ref. A ref at a later record already is left alone, and said
// (*LedgerAheadError).
func (l *Local) RecordLedgerHead(ctx context.Context, h LedgerHead) error {
	ref := LedgerRef(h.Host, h.Path)
	for try := 0; ; try++ {
		cur, old, ok, err := l.readLedgerHead(ref)
		if err != nil && !errors.Is(err, ErrNotLedgerHead) {
			return err
		}
		if ok && cur.Seq >= h.Seq {
			return ledgerhead.Ahead(l.ID(), cur, h)
		}
		symbolic := errors.Is(err, ledgerhead.ErrSymbolicRef)
		r, err := l.open()
		var id plumbing.Hash
		if err == nil {
			id, err = ledgerhead.WriteCommit(r, h, old)
		}
		if err != nil {
			return fmt.Errorf("%s: writing the ledger's head: %w", l.ID(), err)
		}
		// --no-deref: the ref itself moves, never what a symbolic ref
		// there names (a branch would move to the head's commit, which
		// no reviewer approved). A symbolic ref is replaced whatever it
		// names: it has no value of its own to compare.
		args := []string{"update-ref", "--no-deref", "-m", "airlock: ledger head", ref, id.String()}
		if !symbolic {
			args = append(args, old.String())
		}
		_, err = l.git(ctx, nil, args...)
		if err == nil {
			return nil
		}
		if try+1 >= ledgerhead.Tries {
			return fmt.Errorf("%s: moving %s: %w", l.ID(), ref, err)
		}
	}
}

// ReadLedgerHead returns the head the repository keeps for the ledger at
// path on host; ok is false when it keeps none.
func (l *Local) ReadLedgerHead(ctx context.Context, host, path string) (LedgerHead, bool, error) {
	h, _, ok, err := l.readLedgerHead(LedgerRef(host, path))
	h.Host, h.Path = host, path // they key the ref; the target does not hold them
	if err != nil {
		return LedgerHead{}, false, fmt.Errorf("%s: %w", l.ID(), err)
	}
	return h, ok, nil
}

// readLedgerHead reads the head at ref, and the commit the ref holds (zero
// when there is none).
func (l *Local) readLedgerHead(ref string) (LedgerHead, plumbing.Hash, bool, error) {
	r, err := l.open()
	if err != nil {
		return LedgerHead{}, plumbing.ZeroHash, false, err
	}
	return ledgerhead.Read(r, ref)
}
