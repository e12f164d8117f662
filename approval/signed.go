package approval

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/nats-io/nkeys"
)

// A decision that comes from another process (a reviewer on the broker's
// socket, or anyone who can write a fleet's queue) opens the door only
// when a reviewer's key signed it: SignedDecision carries the decision,
// the reviewer's public key (an nkeys user key, "U…", ed25519) and the
// signature over SignedBytes, which cover everything the decision decides
// and what it was decided over (Fingerprint of the request shown).

// SignedDecision is a reviewer's decision with the signature that makes
// it one.
type SignedDecision struct {
	Decision Decision `json:"decision"`
	// Fingerprint is Fingerprint of the request the reviewer was shown.
	Fingerprint string `json:"fingerprint"`
	Key         string `json:"key"` // the reviewer's public key
	Sig         string `json:"sig"` // base64 of the ed25519 signature over SignedBytes
}

// Signer is a reviewer's key: an nkeys.KeyPair made from its seed.
type Signer interface {
	PublicKey() (string, error)
	Sign(input []byte) ([]byte, error)
}

// signContext separates airlock's decisions from anything else a key
// might sign: a signature over other bytes never verifies as a decision.
const signContext = "airlock decision v1"

// Fingerprint is what a decision covers of a request: all of it that a
// reviewer is shown (every commit's whole message, the files, the diff,
// the flags, what changed since an earlier review, and any field added
// later), not when it was offered; the request's id is signed on its own.
// The request goes through JSON once before it is hashed, as the reviewer
// receives it: encoding/json writes a string's invalid UTF-8 as \ufffd,
// and the reviewer's copy holds U+FFFD itself.
func Fingerprint(r *Request) string {
	if r == nil {
		return ""
	}
	c := *r
	c.ID, c.Time = "", time.Time{}
	b, err := canonical(&c, new(Request))
	if err != nil {
		return "" // never equal to a signed one: the decision is refused
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// signedBody is what a reviewer's signature covers, in this order. The
// commits a pick makes (Decision.New, Commits) are the gate's to make,
// never the reviewer's to say, so they are not in it.
type signedBody struct {
	Context     string     `json:"context"`
	Request     string     `json:"request"`
	Fingerprint string     `json:"fingerprint"`
	Verdict     Verdict    `json:"verdict"`
	Paths       []string   `json:"paths"`
	Accept      []Accepted `json:"accept"` // hunks, lines and edited messages
	Reason      string     `json:"reason"`
	Comments    []Comment  `json:"comments"`
	Scope       string     `json:"scope"`
	By          string     `json:"by"`
	Time        time.Time  `json:"time"`
	Key         string     `json:"key"`
	// Undoable is left out when false: a decision signed before it
	// existed verifies as it did.
	Undoable bool `json:"undoable,omitempty"`
}

// SignedBytes are the canonical bytes a reviewer signs for d over the
// request of fingerprint fp, as the holder of key.
func SignedBytes(d Decision, fp, key string) ([]byte, error) {
	return canonical(&signedBody{signContext, d.Request, fp, d.Verdict, d.Paths, d.Accept, d.Reason,
		d.Comments, d.Scope, d.By, d.Time.UTC(), key, d.Undoable}, new(signedBody))
}

// canonical is v's JSON after one trip through JSON into fresh (of v's
// type): the bytes both the signer and the verifier arrive at, whichever
// of them holds the original.
func canonical[T any](v *T, fresh *T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, fresh); err != nil {
		return nil, err
	}
	return json.Marshal(fresh)
}

// Sign signs d as the reviewer holding k, over the request r it was
// shown; d's Time is set to now when zero.
func Sign(k Signer, r *Request, d Decision) (SignedDecision, error) {
	key, err := k.PublicKey()
	if err != nil {
		return SignedDecision{}, fmt.Errorf("the reviewer's key: %w", err)
	}
	if d.Time.IsZero() {
		d.Time = time.Now()
	}
	d.Request, d.Time, d.New, d.Commits, d.UndoUntil = r.ID, d.Time.UTC().Round(0), plumbing.ZeroHash, nil, time.Time{}
	d.Key, d.Sig, d.Fingerprint = "", "", ""
	fp := Fingerprint(r)
	if fp == "" && d.Verdict != Reject {
		return SignedDecision{}, errUnfingerprinted
	}
	msg, err := SignedBytes(d, fp, key)
	if err != nil {
		return SignedDecision{}, err
	}
	sig, err := k.Sign(msg)
	if err != nil {
		return SignedDecision{}, fmt.Errorf("signing the decision: %w", err)
	}
	return SignedDecision{Decision: d, Fingerprint: fp, Key: key, Sig: base64.StdEncoding.EncodeToString(sig)}, nil
}

// errUnfingerprinted: the request does not survive a trip through JSON
// (a field of a value JSON cannot carry back), so what a reviewer was
// shown of it cannot be told apart from another.
var errUnfingerprinted = errors.New("the request cannot be fingerprinted (it does not come back whole from JSON), so it can only be rejected: reject it, or ask the operator to look at the ledger's request record")

// ErrUnverified: a decision that no trusted reviewer's key signed over
// the request pending (unsigned, signed wrongly, by a key the server does
// not trust, or over another request): refused, and recorded as such.
var ErrUnverified = errors.New("decision refused: not signed by a reviewer this server trusts")

// verify checks s's signature and key (checkSigned), then that it was
// made over fp, the request pending (checkFingerprint). The error says
// which failed.
func (s SignedDecision) verify(trusted map[string]bool, fp string) error {
	if err := s.checkSigned(trusted); err != nil {
		return err
	}
	return s.checkFingerprint(fp)
}

// checkSigned checks s's signature (by s.Key, over its own bytes) and
// that the key is one of trusted: cheap, so it comes before the
// request's fingerprint, a JSON trip of its whole diff.
func (s SignedDecision) checkSigned(trusted map[string]bool) error {
	switch {
	case s.Key == "" || s.Sig == "":
		return errors.New("it is not signed (a reviewer signs with its key: airlock review --print-key shows it)")
	case !nkeys.IsValidPublicUserKey(s.Key):
		return fmt.Errorf("its key %.60q is not a reviewer's public key (U…)", s.Key)
	}
	sig, err := base64.StdEncoding.DecodeString(s.Sig)
	if err != nil {
		return errors.New("its signature is not base64")
	}
	msg, err := SignedBytes(s.Decision, s.Fingerprint, s.Key)
	if err != nil {
		return err
	}
	kp, err := nkeys.FromPublicKey(s.Key)
	if err != nil {
		return fmt.Errorf("its key: %v", err)
	}
	if kp.Verify(msg, sig) != nil {
		return fmt.Errorf("its signature does not verify under key %s: the decision was changed after it was signed, or forged", s.Key)
	}
	if !trusted[s.Key] {
		return fmt.Errorf("key %s is not one this server trusts (airlock serve --reviewer-key)", s.Key)
	}
	return nil
}

// checkFingerprint checks that s was signed over fp, the fingerprint of
// the request pending under its id.
func (s SignedDecision) checkFingerprint(fp string) error {
	if (fp == "" || s.Fingerprint == "") && s.Decision.Verdict != Reject {
		// Every request that cannot be fingerprinted would share "":
		// a signature over one of them would cover all of them. Only a
		// rejection, which lets nothing through, may be made of one.
		return errUnfingerprinted
	}
	if s.Fingerprint != fp {
		return errors.New("it was signed over another request than the one pending under its id (the request changed since the reviewer saw it, or the signature was taken from another request): decide it again")
	}
	return nil
}
