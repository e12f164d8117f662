package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/targets"
)

// ledgerHeadWait bounds how long a landed push waits to keep the ledger's
// head in its target.
const ledgerHeadWait = 30 * time.Second

// ledgerHeadRecorder is a target that keeps the ledger's head
// (targets.Local, targets/github.Target).
type ledgerHeadRecorder interface {
	RecordLedgerHead(ctx context.Context, h targets.LedgerHead) error
}

// recordLedgerHead writes the ledger's head (its last record, the push's
// "pushed" one or later) into t after a push landed there, so that a
// ledger cut or rewritten behind it is caught against t by `airlock
// ledger verify`, even when its anchor file was rewritten too.
func (s *Session) recordLedgerHead(ctx context.Context, t targets.Target) error {
	r, ok := t.(ledgerHeadRecorder)
	if !ok {
		return nil
	}
	rec, first, path, err := s.gate.LedgerHead()
	if err != nil || path == "" || rec.Hash == "" {
		return err
	}
	host, abs := targets.LedgerAt(path)
	// The push has landed and its answer waits on this: a GitHub that
	// rate-limits does not hold it for minutes (the next push catches up).
	ctx, cancel := context.WithTimeout(ctx, ledgerHeadWait)
	defer cancel()
	err = r.RecordLedgerHead(ctx, targets.LedgerHead{Seq: rec.Seq, Hash: rec.Hash, First: first.Hash, Host: host, Path: abs, Time: rec.Time})
	var a *targets.LedgerAheadError
	if errors.As(err, &a) {
		return s.keptAhead(first.Hash, a)
	}
	return err
}

// keptAhead decides a target keeping a head past this push's: one of this
// ledger's own records (another server sharing the ledger pushed later)
// is as it should be; any other is a ledger cut or rewritten since, or a
// ref someone else wrote to stop the head from moving (a hostile target
// can write it: the head then no longer catches a cut against it).
func (s *Session) keptAhead(first string, a *targets.LedgerAheadError) error {
	r, ok, err := s.gate.LedgerRecord(a.Kept.Seq)
	if err != nil {
		return err
	}
	if ok && r.Hash == a.Kept.Hash && a.Kept.First == first {
		return nil
	}
	return fmt.Errorf("%s keeps record %d (hash %s) of a ledger this one does not hold at that number: this ledger was cut or rewritten since, or the target's ref %s was written by someone else; `airlock ledger verify --target %s` says which. The ref was left where it is",
		a.Target, a.Kept.Seq, a.Kept.Hash, targets.LedgerRef(a.Kept.Host, a.Kept.Path), a.Target)
}
