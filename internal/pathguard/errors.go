package pathguard

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every refusal of the guard, the deny list and the
// symlink policy wraps exactly one of them, so callers branch with
// errors.Is and workers read the message.
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
// (memfs's) a quota. Its message quotes the offending path (so control
// bytes cannot forge log lines), names the rule, and says what to do
// instead.
type Error struct {
	Op   string // the operation: "read", "write", "rename", ...
	Path string // the path as the caller gave it
	Rule Rule   // empty for quota errors
	// Detail says what exactly was wrong and what to do instead.
	Detail string
	Err    error // one of the sentinels above, or memfs's
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

// Refuse builds a refusal of path by rule. The operation is stamped later by
// the caller that knows it.
func Refuse(path string, rule Rule, sentinel error, format string, args ...any) *Error {
	return &Error{Path: path, Rule: rule, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}
