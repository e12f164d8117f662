package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
)

// A saved session belongs to the server that made it: its worker (the
// file, as it was, or the default worker's repository), the targets that
// worker names, and the operator's flags that decide what may leave the
// sandbox without a person (pushes refused, or approved unasked) and what
// commands may reach (the network, host paths, secrets in their
// environment). It resumes only where all of them are the same: a token,
// or a session id, never opens a session under a wider policy than the
// one it was made under (a session made under --never-approve, resumed
// by a server with --auto-approve, would push its staged commit unasked).
// A narrower policy is refused too: which server a session belongs to is
// simpler to tell when it is one.

// Binding is what a session is bound to, besides its worker key.
type Binding struct {
	// WorkerSHA256 is the worker file's content (SHA-256, hex) when the
	// session was made; "" for the default worker, which the key names.
	WorkerSHA256 string `json:"worker_sha256,omitempty"`
	// Targets are the worker's targets as NAME=ID (REPO:NAME=ID for a
	// multi-repository worker) and its auto_pull sources as pull=ID,
	// sorted.
	Targets []string `json:"targets"`
	Policy  Policy   `json:"policy"`
}

// Policy is the operator's flags that decide what a session may do.
type Policy struct {
	// Approval is "never" (--never-approve) or "ask".
	Approval string `json:"approval"`
	// AutoApprove are the targets pushed to unasked (--auto-approve), by
	// id, sorted.
	AutoApprove []string `json:"auto_approve,omitempty"`
	// Run is the run tool's mode (--run, --danger): off, workspace-write,
	// read-only or danger.
	Run string `json:"run"`
	// RunReadOnly are the host paths commands see (--run-ro), sorted.
	RunReadOnly []string `json:"run_ro,omitempty"`
	// RunEnvKeys are the names of the variables --run-env gives commands,
	// sorted, and RunEnvSHA256 the hash of the whole KEY=VALUE list: the
	// values may be secrets, and are not written down.
	RunEnvKeys   []string `json:"run_env_keys,omitempty"`
	RunEnvSHA256 string   `json:"run_env_sha256,omitempty"`
}

// runDefault is the run tool's mode a server has without --run
// (session.RunWorkspaceWrite): its flags leave it out.
const runDefault = "workspace-write"

// ErrOtherServer: a saved session belongs to a server of another worker
// or policy.
var ErrOtherServer = errors.New("the session belongs to another airlock server")

// BindingError says why a session does not open here, and which server
// opens it.
type BindingError struct {
	ID      string
	Diffs   []string // what differs, each "the session's; this server's"
	Command string   // the command line of a server that resumes it
}

func (e *BindingError) Error() string {
	return fmt.Sprintf("session %s was made by another airlock server (%s), so this one will not resume it: "+
		"a session resumes only under the worker and the flags it was made with. Resume it with %s; "+
		"or take its work out with `airlock sessions export %s DIR`, or start a new session here",
		e.ID, strings.Join(e.Diffs, "; "), e.Command, e.ID)
}

func (e *BindingError) Unwrap() error { return ErrOtherServer }

// CheckOwner reports whether a server of worker key with binding b may
// resume the session of m: nil, or a *BindingError. A session saved
// before sessions recorded a binding is the worker's (same key) whatever
// its policy; Claim binds it.
func CheckOwner(m Meta, key string, b Binding) error {
	var diffs []string
	if m.WorkerKey != key {
		diffs = append(diffs, fmt.Sprintf("worker %s; this server's is %s", describeKey(m.WorkerKey), describeKey(key)))
	}
	if sb := m.Binding; sb != nil && m.WorkerKey == key {
		if sb.WorkerSHA256 != b.WorkerSHA256 {
			diffs = append(diffs, fmt.Sprintf("the worker file has changed since the session was made (SHA-256 %s then, %s now): restore it as it was",
				shortid.Hex(sb.WorkerSHA256), shortid.Hex(b.WorkerSHA256)))
		}
		if !slices.Equal(sb.Targets, b.Targets) {
			diffs = append(diffs, fmt.Sprintf("targets %s; this server's are %s", namesOrNone(sb.Targets), namesOrNone(b.Targets)))
		}
		diffs = append(diffs, sb.Policy.diff(b.Policy)...)
	}
	if len(diffs) == 0 {
		return nil
	}
	return &BindingError{ID: m.ID, Diffs: diffs, Command: m.ServeCommand()}
}

func describeKey(key string) string {
	switch kind, rest, _ := strings.Cut(key, ":"); kind {
	case "file":
		return "file " + rest
	case "default":
		return "the default worker of " + strings.TrimPrefix(strings.TrimPrefix(rest, "local:"), "local-bare:")
	}
	return key
}

// diff lists where p (a session's) and q (this server's) differ, in the
// operator's flags.
func (p Policy) diff(q Policy) []string {
	var out []string
	if p.Approval != q.Approval {
		out = append(out, fmt.Sprintf("pushes %s; this server's %s", p.approvalWords(), q.approvalWords()))
	}
	if !slices.Equal(p.AutoApprove, q.AutoApprove) {
		out = append(out, fmt.Sprintf("--auto-approve %s; this server's %s", namesOrNone(p.AutoApprove), namesOrNone(q.AutoApprove)))
	}
	if p.Run != q.Run {
		out = append(out, fmt.Sprintf("--run %s; this server's --run %s", p.Run, q.Run))
	}
	if !slices.Equal(p.RunReadOnly, q.RunReadOnly) {
		out = append(out, fmt.Sprintf("--run-ro %s; this server's %s", namesOrNone(p.RunReadOnly), namesOrNone(q.RunReadOnly)))
	}
	if p.RunEnvSHA256 != q.RunEnvSHA256 {
		out = append(out, fmt.Sprintf("--run-env %s; this server's %s (names shown, values compared)", namesOrNone(p.RunEnvKeys), namesOrNone(q.RunEnvKeys)))
	}
	return out
}

func (p Policy) approvalWords() string {
	if p.Approval == "never" {
		return "never approved (--never-approve)"
	}
	return "asked of a reviewer"
}

func namesOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// flags is the policy as airlock serve's flags; an env value is shown as
// "..." (it was not written down).
func (p Policy) flags() []string {
	var out []string
	if p.Approval == "never" {
		out = append(out, "--never-approve")
	}
	for _, id := range p.AutoApprove {
		out = append(out, "--auto-approve "+id)
	}
	if p.Run != "" && p.Run != runDefault {
		out = append(out, "--run "+p.Run)
	}
	for _, ro := range p.RunReadOnly {
		out = append(out, "--run-ro "+ro)
	}
	for _, k := range p.RunEnvKeys {
		out = append(out, "--run-env "+k+"=...")
	}
	return out
}

// ServeCommand is the command line of a server that resumes the session
// (for a session from before bindings, the worker's alone).
func (m Meta) ServeCommand() string {
	args := []string{"airlock serve"}
	prefix := ""
	switch kind, rest, _ := strings.Cut(m.WorkerKey, ":"); kind {
	case "file":
		args = append(args, "--worker "+rest)
	case "default":
		if _, path, ok := strings.Cut(rest, ":"); ok {
			prefix = "cd " + path + " && "
		}
	}
	if m.Transport == "http" {
		args = append(args, "--http ADDR")
	}
	if m.Binding != nil {
		args = append(args, m.Binding.Policy.flags()...)
	}
	if m.Transport != "http" {
		args = append(args, "--session "+m.ID)
	}
	return "`" + prefix + strings.Join(args, " ") + "`"
}
