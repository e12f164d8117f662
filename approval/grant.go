package approval

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/go-git/go-git/v5/plumbing"
)

// Grant is the capability a target requires to push: exactly commit New
// to Ref of Target, where Ref holds exactly Old now. Only this package
// makes one, and only after the decision is in the ledger. Its zero value,
// the only one other packages can make, grants nothing.
type Grant struct {
	g *grant
}

type grant struct {
	target, ref string
	old, new    plumbing.Hash
	request     string
}

// Valid reports whether g came from an approval.
func (g Grant) Valid() bool { return g.g != nil }

// Target, Ref, Old and New say what the grant covers; zero for the zero
// Grant.
func (g Grant) Target() string {
	if g.g == nil {
		return ""
	}
	return g.g.target
}

func (g Grant) Ref() string {
	if g.g == nil {
		return ""
	}
	return g.g.ref
}

func (g Grant) Old() plumbing.Hash {
	if g.g == nil {
		return plumbing.ZeroHash
	}
	return g.g.old
}

func (g Grant) New() plumbing.Hash {
	if g.g == nil {
		return plumbing.ZeroHash
	}
	return g.g.new
}

// Request is the id of the approved request.
func (g Grant) Request() string {
	if g.g == nil {
		return ""
	}
	return g.g.request
}

// Check refuses a push that the grant does not name exactly: target, ref,
// the commit the ref holds now, and the commit to push. A target calls it
// with what it is about to do, after reading the ref.
func (g Grant) Check(target, ref string, old, new plumbing.Hash) error {
	if g.g == nil {
		return ErrNoGrant
	}
	var diffs []string
	if g.g.target != target {
		diffs = append(diffs, fmt.Sprintf("target %s, not %s", g.g.target, target))
	}
	if g.g.ref != ref {
		diffs = append(diffs, fmt.Sprintf("ref %s, not %s", g.g.ref, ref))
	}
	if g.g.old != old {
		diffs = append(diffs, fmt.Sprintf("the ref at %s, but it is at %s now", shortid.HashOr(g.g.old, "(none)"), shortid.HashOr(old, "(none)")))
	}
	if g.g.new != new {
		diffs = append(diffs, fmt.Sprintf("commit %s, not %s", shortid.HashOr(g.g.new, "(none)"), shortid.HashOr(new, "(none)")))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: it approved %s", ErrGrantMismatch, strings.Join(diffs, "; "))
	}
	return nil
}

// PushRecord is the ledger's record of how a push went: a granted one
// (Grant.Record: landing, then pushed or failed), one a restart
// interrupted, found landed ("pushed") or not ("failed") when its session
// resumed (Recovered says so), or a request a resumed session withdrew
// ("withdrawn", Recovered says why).
type PushRecord struct {
	Request, Target, Ref string
	Old, New             plumbing.Hash
	Result               string
	Err                  error
	// Recovered: the session that records it resumed after a restart, and
	// why it records this outcome.
	Recovered string
}

// Record is the record of g's push with result (landing, pushed or
// failed) and err, what the target answered.
func (g Grant) Record(result string, err error) PushRecord {
	return PushRecord{Request: g.Request(), Target: g.Target(), Ref: g.Ref(), Old: g.Old(), New: g.New(), Result: result, Err: err}
}

// RecordPush writes r to the ledger. With the gate's own records of the
// request, its decision and a withdrawal, it is the one writer of every
// record of a push.
func (g *Gate) RecordPush(r PushRecord) error {
	if r.Result == "withdrawn" {
		_, err := g.ledger.Append(ledger.KindWithdrawal, map[string]string{"request": r.Request, "why": r.Recovered})
		return err
	}
	rec := map[string]string{"request": r.Request, "target": r.Target, "ref": r.Ref,
		"old": r.Old.String(), "new": r.New.String(), "result": r.Result}
	if r.Err != nil {
		rec["error"] = r.Err.Error()
	}
	if r.Recovered != "" {
		rec["recovered"] = r.Recovered
	}
	_, err := g.ledger.Append(ledger.KindPush, rec)
	return err
}
