package record

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

const (
	recObject byte = 1
	recState  byte = 2
)

// object record flags: the object was written with everything it reaches
// (a shallow commit is one kept for its id only, as Collect keeps a base's
// parents).
const objDeep byte = 1

// IsCommit reports whether a record of type typ ends a batch: the journal
// holds what its last such record says.
func IsCommit(typ byte) bool { return typ == recState }

// ErrNoState: the journal holds no complete state (a session killed
// before its first save).
var ErrNoState = errors.New("the session's journal holds no saved state")

type stateRec struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Full bool      `json:"full,omitempty"`
	Live *snapRec  `json:"live,omitempty"`
	Cps  *[]cpRec  `json:"cps,omitempty"`
	Area *areaRec  `json:"area,omitempty"`
	// Repos are a multi-repository session's areas, by repository (Area
	// is a single-repository session's); a record has those that changed.
	Repos map[string]*areaRec `json:"repos,omitempty"`
	Sess  json.RawMessage     `json:"sess,omitempty"`
}

// The slots of a repository's trees: its base, and its staged commits'
// workspace sides. A single-repository session's (name "") are "base"
// and "c:COMMIT"; a multi-repository session's carry the name.
func slotBase(repo string) string {
	if repo == "" {
		return "base"
	}
	return "base:" + repo
}

func slotCommits(repo string) string {
	if repo == "" {
		return "c:"
	}
	return "c:" + repo + ":"
}

// snapRec is a tree as a delta against another, named by its slot: a
// record's trees are its slots "live", "base", "c:COMMIT" (a staged
// commit's workspace side) and "cp:NAME", computed in that order; From
// names one computed before in the same record, or "prev:SLOT" as the
// record before left it, or "empty".
type snapRec struct {
	From  string     `json:"from"`
	Delta []deltaRec `json:"delta,omitempty"`
}

type deltaRec struct {
	Path   string `json:"p"`
	Remove bool   `json:"r,omitempty"`
	Mode   uint32 `json:"m,omitempty"`
	Blob   string `json:"b,omitempty"`
	Ino    uint64 `json:"i,omitempty"`
	// Lazy: Blob is a base's blob of Size bytes that the session reads
	// where it was pulled from (its sources); the journal has no copy.
	Lazy bool  `json:"z,omitempty"`
	Size int64 `json:"s,omitempty"`
}

type cpRec struct {
	Name string    `json:"name"`
	Time time.Time `json:"time"`
	Keep bool      `json:"keep,omitempty"`
	Snap *snapRec  `json:"snap,omitempty"`
}

type areaRec struct {
	Base    linkRec      `json:"base"`
	Chain   []linkRec    `json:"chain,omitempty"`
	Pulled  *[]string    `json:"pulled,omitempty"`
	Dropped []refusalRec `json:"dropped,omitempty"`
}

type linkRec struct {
	ID     string     `json:"id,omitempty"`
	Tree   string     `json:"tree,omitempty"`
	View   string     `json:"view,omitempty"`
	Paths  []string   `json:"paths,omitempty"`
	Snap   *snapRec   `json:"snap"`
	Commit *commitRec `json:"commit,omitempty"` // written once per commit
}

type commitRec struct {
	ID        string           `json:"id"`
	Parent    string           `json:"parent,omitempty"`
	Base      string           `json:"base,omitempty"`
	Tree      string           `json:"tree"`
	Message   string           `json:"message"`
	Author    object.Signature `json:"author"`
	Committer object.Signature `json:"committer"`
	Created   time.Time        `json:"created"`
	Files     []fileRec        `json:"files"`
	Replaces  []string         `json:"replaces,omitempty"` // staging.Commit.Replaces
}

type fileRec struct {
	Path    string `json:"p"`
	Op      uint8  `json:"op"`
	Blob    string `json:"b,omitempty"`
	Size    int64  `json:"s"`
	Mode    uint32 `json:"m"`
	OldBlob string `json:"ob,omitempty"`
	OldMode uint32 `json:"om,omitempty"`
}

type refusalRec struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// setArea puts a repository's area record where its kind of session keeps
// it.
func (rec *stateRec) setArea(repo string, a *areaRec) {
	if repo == "" {
		rec.Area = a
		return
	}
	if rec.Repos == nil {
		rec.Repos = map[string]*areaRec{}
	}
	rec.Repos[repo] = a
}

// HexOf is an object id as records write it: "" for none.
func HexOf(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// HashOf reads an object id HexOf wrote.
func HashOf(s string) (plumbing.Hash, error) {
	if s == "" {
		return plumbing.ZeroHash, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 20 {
		return plumbing.ZeroHash, fmt.Errorf("session state: %q is not an object id", s)
	}
	var h plumbing.Hash
	copy(h[:], b)
	return h, nil
}
