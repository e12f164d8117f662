package store

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Meta is what a session is for.
type Meta struct {
	ID         string    `json:"id"`
	Worker     string    `json:"worker"`
	WorkerKey  string    `json:"worker_key"` // which worker file (or repository, for the default worker)
	WorkerFile string    `json:"worker_file,omitempty"`
	Created    time.Time `json:"created"`
	// Transport is "http" for a session of airlock serve --http, which
	// only its own token resumes (TokenHash, the SHA-256 of it in hex);
	// "" for one over stdio, which the worker's next server resumes.
	Transport string `json:"transport,omitempty"`
	TokenHash string `json:"token_hash,omitempty"`
	// Binding is the worker file's content, its targets and the
	// operator's policy the session was made under: it resumes only
	// under the same (binding.go). Nil in a session saved before
	// sessions recorded it.
	Binding *Binding `json:"binding,omitempty"`
}

// Summary is a session's state in counts, for people.
type Summary struct {
	Updated     time.Time `json:"updated"`
	Changed     int       `json:"changed"`     // files changed and not staged
	Staged      int       `json:"staged"`      // staged commits
	Checkpoints int       `json:"checkpoints"` // checkpoints
	Pending     int       `json:"pending"`     // pushes waiting for a reviewer
	Closed      bool      `json:"closed"`      // its server ended it cleanly
	Bytes       int64     `json:"bytes"`       // the journal's size
}

// Unfinished reports whether the session holds work that has not left:
// changes, staged commits or pushes waiting.
func (s Summary) Unfinished() bool { return s.Changed > 0 || s.Staged > 0 || s.Pending > 0 }

// Listed is a session as airlock sessions list shows it.
type Listed struct {
	Meta
	Summary
	Where   string // where its state is kept (Lease.Where)
	Running bool   // a server has it open now
	NoState bool   // it never saved anything
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewID names a session made at t: its time, then random, so that ids
// sort by age and two made in one second differ.
func NewID(t time.Time) string { return t.Format("20060102-150405") + "-" + RandomHex(4) }
