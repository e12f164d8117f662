package targets

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v93/github"

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

// RecordLedgerHead moves the ledger's ref on GitHub forward to h through
// the Git Data API: a tree of one inline file, a commit on the one the ref
// held, and the ref created or fast-forwarded (never forced).
func (g *GitHub) RecordLedgerHead(ctx context.Context, h LedgerHead) error {
	ref := LedgerRef(h.Host, h.Path)
	for try := 0; ; try++ {
		cur, old, ok, err := g.readLedgerHead(ctx, ref)
		if err != nil && !errors.Is(err, ErrNotLedgerHead) {
			return err
		}
		if ok && cur.Seq >= h.Seq {
			return ledgerhead.Ahead(g.ID(), cur, h)
		}
		tree, _, err := g.client.Git.CreateTree(ctx, g.owner, g.repo, "", []*github.TreeEntry{{
			Path: new(ledgerhead.File), Mode: new("100644"), Type: new("blob"), Content: new(h.Text()),
		}})
		if err != nil {
			return g.explain("writing the ledger's head", err)
		}
		c := github.Commit{Message: new(h.Message()), Tree: &github.Tree{SHA: tree.SHA}}
		if !old.IsZero() {
			c.Parents = []*github.Commit{{SHA: new(old.String())}}
		}
		made, _, err := g.client.Git.CreateCommit(ctx, g.owner, g.repo, c, nil)
		if err != nil {
			return g.explain("writing the ledger's head", err)
		}
		err = g.moveRef(ctx, ref, old, plumbing.NewHash(made.GetSHA()))
		if err == nil || try+1 >= ledgerhead.Tries {
			return err
		}
	}
}

func (g *GitHub) readLedgerHead(ctx context.Context, ref string) (LedgerHead, plumbing.Hash, bool, error) {
	r, _, err := g.client.Git.GetRef(ctx, g.owner, g.repo, strings.TrimPrefix(ref, "refs/"))
	switch status(err) {
	case 0:
	case http.StatusNotFound, http.StatusConflict:
		return LedgerHead{}, plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return LedgerHead{}, plumbing.ZeroHash, false, g.explain("reading "+ref, err)
	}
	if r.GetRef() != ref || r.GetObject().GetType() != "commit" {
		return LedgerHead{}, plumbing.ZeroHash, false, fmt.Errorf("%w: %s is not a ref to a commit", ErrNotLedgerHead, ref)
	}
	id := plumbing.NewHash(r.GetObject().GetSHA())
	c, _, err := g.client.Git.GetCommit(ctx, g.owner, g.repo, id.String())
	if err != nil {
		return LedgerHead{}, id, false, g.explain("reading "+ref, err)
	}
	h, err := ledgerhead.Parse(c.GetMessage())
	return h, id, err == nil, err
}

// ReadLedgerHead returns the head the repository keeps for the ledger at
// path on host; ok is false when it keeps none.
func (g *GitHub) ReadLedgerHead(ctx context.Context, host, path string) (LedgerHead, bool, error) {
	h, _, ok, err := g.readLedgerHead(ctx, LedgerRef(host, path))
	h.Host, h.Path = host, path // they key the ref; the target does not hold them
	if err != nil {
		return LedgerHead{}, false, g.clean(fmt.Errorf("%s: %w", g.ID(), err))
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
