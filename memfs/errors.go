package memfs

import (
	"errors"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs/internal/resolve"
)

// Sentinel errors. Every refusal the workspace makes wraps exactly one of
// them, so callers branch with errors.Is and workers read the message. The
// path guard's three (a malformed name, one outside the workspace, one
// policy denies) are pathguard's own values, so errors.Is agrees whichever
// package a caller names them by.
var (
	ErrInvalidPath    = pathguard.ErrInvalidPath
	ErrOutsideSandbox = pathguard.ErrOutsideSandbox
	ErrDenied         = pathguard.ErrDenied
	// ErrQuotaExceeded: the operation would cross a size or count limit.
	// Nothing was changed.
	ErrQuotaExceeded = errors.New("quota exceeded")
	// ErrStale: an open file handle refers to a file that was removed,
	// renamed or rolled back since the handle was opened.
	ErrStale = errors.New("file changed since it was opened")
	// ErrNoCheckpoint: Rollback or DeleteCheckpoint named a checkpoint that
	// does not exist.
	ErrNoCheckpoint = errors.New("no such checkpoint")
)

// Error is a refusal by the path guard, the deny list, the symlink policy or
// a quota: one type, pathguard's, so errors.As finds it by either name.
type Error = pathguard.Error

// withOp stamps op on a refusal and passes other errors through.
func withOp(err error, op string) error { return resolve.WithOp(err, op) }
