package memfs

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every refusal the workspace makes wraps exactly one of
// them, so callers branch with errors.Is and workers read the message.
var (
	// ErrInvalidPath: the name is malformed (empty, control bytes, "." or
	// empty segments, reserved device names, too long...).
	ErrInvalidPath = errors.New("invalid path")
	// ErrOutsideSandbox: the name, or a symlink on the way, points outside
	// the workspace (absolute paths, drive letters, "..", escaping links).
	ErrOutsideSandbox = errors.New("outside the workspace")
	// ErrDenied: the name is well formed but policy forbids it: ".git" in
	// any disguise, or a deny pattern such as ".env" or "*.pem".
	ErrDenied = errors.New("denied by policy")
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

// Rule names the check a path failed. Rules are stable identifiers: tests,
// logs and the ledger may record them.
type Rule string

// The rules of the path guard, the deny list and the symlink policy.
const (
	RuleEmpty          Rule = "empty"
	RulePathTooLong    Rule = "path-too-long"
	RuleNameTooLong    Rule = "name-too-long"
	RuleInvalidUTF8    Rule = "invalid-utf8"
	RuleControl        Rule = "control-character"
	RuleInvisible      Rule = "invisible-character"
	RuleBackslash      Rule = "backslash"
	RuleAbsolute       Rule = "absolute"
	RuleDriveLetter    Rule = "drive-letter"
	RuleDotDot         Rule = "dot-dot"
	RuleDot            Rule = "dot-segment"
	RuleEmptySegment   Rule = "empty-segment"
	RuleGitDir         Rule = "git-dir"
	RuleReserved       Rule = "windows-reserved-name"
	RuleDenied         Rule = "deny-pattern"
	RuleSymlinkTarget  Rule = "symlink-target"
	RuleSymlinkEscape  Rule = "symlink-escape"
	RuleGitSpecialLink Rule = "git-special-symlink"
)

// Error is a refusal by the path guard, the deny list, the symlink policy or
// a quota. Its message quotes the offending path (so control bytes cannot
// forge log lines), names the rule, and says what to do instead.
type Error struct {
	Op   string // the operation: "read", "write", "rename", ...
	Path string // the path as the caller gave it
	Rule Rule   // empty for quota errors
	// Detail says what exactly was wrong and what to do instead.
	Detail string
	Err    error // one of the sentinels above
}

func (e *Error) Error() string {
	op := e.Op
	if op == "" {
		op = "path"
	}
	if e.Rule == "" {
		return fmt.Sprintf("%s %q: %v: %s", op, e.Path, e.Err, e.Detail)
	}
	return fmt.Sprintf("%s %q: %v (rule %s): %s", op, e.Path, e.Err, e.Rule, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

// RuleOf returns the rule a refusal broke, or "" when err is not a refusal.
func RuleOf(err error) Rule {
	var e *Error
	if errors.As(err, &e) {
		return e.Rule
	}
	return ""
}

// refuse builds a refusal of path by rule. The operation is stamped later by
// the caller that knows it (see withOp).
func refuse(path string, rule Rule, sentinel error, format string, args ...any) *Error {
	return &Error{Path: path, Rule: rule, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// withOp stamps op on a refusal and passes other errors through.
func withOp(err error, op string) error {
	var e *Error
	if errors.As(err, &e) && e.Op == "" {
		e.Op = op
	}
	return err
}
