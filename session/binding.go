package session

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/worker"
)

// A saved session belongs to the server that made it (package store says
// why and how it is checked): these make the binding of a server's worker
// and flags.

type (
	// Binding is what a session is bound to, besides its worker key.
	Binding = store.Binding
	// Policy is the operator's flags that decide what a session may do.
	Policy = store.Policy
	// BindingError says why a session does not open here, and which
	// server opens it.
	BindingError = store.BindingError
)

// ErrOtherServer: a saved session belongs to a server of another worker
// or policy.
var ErrOtherServer = store.ErrOtherServer

// CheckOwner reports whether a server of worker key with binding b may
// resume the session of m: nil, or a *BindingError.
func CheckOwner(m Meta, key string, b Binding) error { return store.CheckOwner(m, key, b) }

// NewPolicy is the policy of a server's flags. env is --run-env's
// KEY=VALUE list; the order of every list is not significant.
func NewPolicy(never bool, autoApprove []string, run RunMode, runReadOnly, env []string) Policy {
	p := Policy{Approval: "ask", Run: string(run)}
	if never {
		p.Approval = "never"
	}
	if run == "" {
		p.Run = "off"
	}
	p.AutoApprove = sortedSet(autoApprove)
	p.RunReadOnly = sortedSet(runReadOnly)
	if len(env) > 0 {
		sorted := slices.Sorted(slices.Values(env))
		sum := sha256.Sum256([]byte(strings.Join(sorted, "\x00")))
		p.RunEnvSHA256 = hex.EncodeToString(sum[:])
		var keys []string
		for _, kv := range sorted {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k)
		}
		p.RunEnvKeys = sortedSet(keys)
	}
	return p
}

// PolicyOf is the policy of a server whose run tool has opts (nil: off).
func PolicyOf(never bool, autoApprove []string, opts *RunOptions) Policy {
	if opts == nil {
		return NewPolicy(never, autoApprove, "off", nil, nil)
	}
	return NewPolicy(never, autoApprove, opts.Mode, opts.ReadOnly, opts.Env)
}

func sortedSet(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(xs)))
}

// BindingOf is the binding of a session of w under p.
func BindingOf(w *worker.Worker, p Policy) Binding {
	b := Binding{WorkerSHA256: w.Digest, Policy: p}
	for _, r := range w.RepoList() {
		prefix := ""
		if r.Name != "" {
			prefix = r.Name + ":"
		}
		for _, name := range r.TargetNames() {
			if spec, ok := r.Resolve(name); ok && spec != nil {
				b.Targets = append(b.Targets, prefix+name+"="+spec.ID())
			}
		}
		for _, pl := range r.AutoPull {
			if pl.Source != nil {
				b.Targets = append(b.Targets, prefix+"pull="+pl.Source.ID())
			}
		}
	}
	b.Targets = sortedSet(b.Targets)
	return b
}
