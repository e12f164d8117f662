package targets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-github/v93/github"
)

// LedgerHead is a ledger's head as a target keeps it: after each push, the
// target's ref LedgerRef(Host, Path) points to a small commit whose message
// (and one file, ledger-head) records the last record of the ledger then.
// The same uid can rewrite its local ledger and the anchor beside it, but
// not what a GitHub repository holds without its token: a ledger cut or
// rewritten behind a push no longer has the record the target names.
//
// The ref is one per ledger (host and path), so that several people's
// airlocks pushing to one repository each keep their own; its commits
// chain, one per push (git log REF lists them), and it only moves
// forward: a record number at or below the one it holds is not written.
// It is outside refs/heads and refs/tags, so clones do not fetch it and no
// branch shows it.
type LedgerHead struct {
	Seq   uint64
	Hash  string // the record's hash
	First string // the hash of the ledger's first record: which chain it is
	// Host and Path name the ledger (the machine and the ledger file's
	// absolute path there) only to key its ref: they are not written
	// into the target, which may be public; a read gives back the ones
	// it was asked for.
	Host string
	Path string
	Time time.Time
}

// LedgerRef is the ref under which targets keep the head of the ledger at
// path on host.
func LedgerRef(host, path string) string {
	sum := sha256.Sum256([]byte(host + "\x00" + path))
	return "refs/airlock/ledger/" + hex.EncodeToString(sum[:8])
}

// LedgerAt names the ledger at path on this machine as its ref is keyed:
// the host name and the absolute path.
func LedgerAt(path string) (host, abs string) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if a, err := filepath.Abs(path); err == nil {
		path = a
	}
	return host, path
}

const ledgerHeadFile = "ledger-head"

// ErrNotLedgerHead: the ref holds something airlock did not write.
var ErrNotLedgerHead = errors.New("not a ledger head airlock wrote")

// errSymbolicRef: the ref is a symbolic ref, which airlock never writes
// through.
var errSymbolicRef = fmt.Errorf("%w (a symbolic ref)", ErrNotLedgerHead)

func (h LedgerHead) text() string {
	return fmt.Sprintf("Airlock-Ledger-Seq: %d\nAirlock-Ledger-Hash: %s\nAirlock-Ledger-First: %s\nAirlock-Ledger-Time: %s\n",
		h.Seq, h.Hash, h.First, h.Time.UTC().Format(time.RFC3339Nano))
}

func (h LedgerHead) message() string {
	return fmt.Sprintf("airlock ledger head: record %d\n\n%s", h.Seq, h.text())
}

// isSHA256Hex: 64 lower-case hex digits, as a ledger's hashes are (a
// target is hostile: what it holds is printed by ledger verify).
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseLedgerHead reads a ledger head commit's message.
func parseLedgerHead(msg string) (LedgerHead, error) {
	var h LedgerHead
	seen := 0
	for _, line := range strings.Split(msg, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "Airlock-Ledger-Seq":
			h.Seq, err = strconv.ParseUint(v, 10, 64)
		case "Airlock-Ledger-Hash":
			h.Hash = v
		case "Airlock-Ledger-First":
			h.First = v
		case "Airlock-Ledger-Time":
			h.Time, err = time.Parse(time.RFC3339Nano, v)
		default:
			continue
		}
		if err != nil {
			return LedgerHead{}, fmt.Errorf("%w: %s: %v", ErrNotLedgerHead, k, err)
		}
		seen++
	}
	if seen != 4 || h.Seq == 0 || !isSHA256Hex(h.Hash) || !isSHA256Hex(h.First) {
		return LedgerHead{}, fmt.Errorf("%w: its message lacks the Airlock-Ledger- lines", ErrNotLedgerHead)
	}
	return h, nil
}

// LedgerAheadError is RecordLedgerHead's answer when the target keeps a
// head at or past the one to write, other than that one: the ref only
// moves forward, so it is left alone, and the caller decides whether the
// head kept is one of its ledger's records (another server of the same
// ledger pushed later) or not (the ledger was cut or rewritten, or the
// ref forged to stop it from moving).
type LedgerAheadError struct {
	Target string     // the target's id
	Kept   LedgerHead // what the target keeps
}

func (e *LedgerAheadError) Error() string {
	return fmt.Sprintf("%s keeps the ledger's head at record %d (hash %s), at or past this one, so it was not moved", e.Target, e.Kept.Seq, e.Kept.Hash)
}

// ahead is nil when the target keeps h itself, else a *LedgerAheadError.
func ahead(id string, cur, h LedgerHead) error {
	if cur.Seq == h.Seq && cur.Hash == h.Hash && cur.First == h.First {
		return nil
	}
	cur.Host, cur.Path = h.Host, h.Path
	return &LedgerAheadError{Target: id, Kept: cur}
}

// ledgerHeadTries bounds the compare-and-swap loop against other servers
// of the same ledger moving the ref at the same moment.
const ledgerHeadTries = 10

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
			return ahead(l.ID(), cur, h)
		}
		symbolic := errors.Is(err, errSymbolicRef)
		id, err := l.writeLedgerCommit(h, old)
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
		if try+1 >= ledgerHeadTries {
			return fmt.Errorf("%s: moving %s: %w", l.ID(), ref, err)
		}
	}
}

// writeLedgerCommit writes h's blob, tree and commit (parent: parent,
// unless zero) into the repository's object database.
func (l *Local) writeLedgerCommit(h LedgerHead, parent plumbing.Hash) (plumbing.Hash, error) {
	r, err := l.open()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) (plumbing.Hash, error) {
		obj := r.Storer.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		return r.Storer.SetEncodedObject(obj)
	}
	blob := r.Storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write([]byte(h.text())); err != nil {
		return plumbing.ZeroHash, err
	}
	w.Close()
	blobID, err := r.Storer.SetEncodedObject(blob)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	treeID, err := put(&object.Tree{Entries: []object.TreeEntry{{Name: ledgerHeadFile, Mode: filemode.Regular, Hash: blobID}}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "airlock", Email: "airlock@localhost", When: h.Time.UTC()}
	c := &object.Commit{Author: sig, Committer: sig, Message: h.message(), TreeHash: treeID}
	if _, err := r.CommitObject(parent); err == nil {
		// Only a commit can be a parent: a ref someone pointed at a
		// blob is replaced, not built on.
		c.ParentHashes = []plumbing.Hash{parent}
	}
	return put(c)
}

// readLedgerHead reads the head at ref, and the commit the ref holds (zero
// when there is none).
func (l *Local) readLedgerHead(ref string) (LedgerHead, plumbing.Hash, bool, error) {
	r, err := l.open()
	if err != nil {
		return LedgerHead{}, plumbing.ZeroHash, false, err
	}
	rf, err := r.Reference(plumbing.ReferenceName(ref), false)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return LedgerHead{}, plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return LedgerHead{}, plumbing.ZeroHash, false, err
	}
	if rf.Type() == plumbing.SymbolicReference {
		return LedgerHead{}, plumbing.ZeroHash, false, fmt.Errorf("%w: %s is a symbolic ref to %s", errSymbolicRef, ref, rf.Target())
	}
	c, err := r.CommitObject(rf.Hash())
	if err != nil {
		return LedgerHead{}, rf.Hash(), false, fmt.Errorf("%w: %s holds %s: %v", ErrNotLedgerHead, ref, rf.Hash(), err)
	}
	h, err := parseLedgerHead(c.Message)
	return h, rf.Hash(), err == nil, err
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
			return ahead(g.ID(), cur, h)
		}
		tree, _, err := g.client.Git.CreateTree(ctx, g.owner, g.repo, "", []*github.TreeEntry{{
			Path: new(ledgerHeadFile), Mode: new("100644"), Type: new("blob"), Content: new(h.text()),
		}})
		if err != nil {
			return g.explain("writing the ledger's head", err)
		}
		c := github.Commit{Message: new(h.message()), Tree: &github.Tree{SHA: tree.SHA}}
		if !old.IsZero() {
			c.Parents = []*github.Commit{{SHA: new(old.String())}}
		}
		made, _, err := g.client.Git.CreateCommit(ctx, g.owner, g.repo, c, nil)
		if err != nil {
			return g.explain("writing the ledger's head", err)
		}
		err = g.moveRef(ctx, ref, old, plumbing.NewHash(made.GetSHA()))
		if err == nil || try+1 >= ledgerHeadTries {
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
	h, err := parseLedgerHead(c.GetMessage())
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
