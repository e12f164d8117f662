package session

import (
	"context"

	"github.com/airlock-dev/airlock/targets"
)

// ledgerHeadRecorder is a target that keeps the ledger's head
// (targets.Local, targets.GitHub).
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
	return r.RecordLedgerHead(ctx, targets.LedgerHead{Seq: rec.Seq, Hash: rec.Hash, First: first.Hash, Host: host, Path: abs, Time: rec.Time})
}

// GitHubOptions says where GitHub is, as the session's targets open it
// (from the environment): `airlock ledger verify` reads the ledger's head
// from the same place.
func GitHubOptions() targets.GitHubOptions { return githubOptions() }
